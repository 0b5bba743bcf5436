// Command image builds pistrad's container image from its recipe
// (deploy/image/Dockerfile) without a container engine or a registry: the
// recipe starts FROM scratch and copies files of the build context, so the
// image is one layer this command writes itself. The output is one tar
// that `docker load`, `podman load` and OCI tools (skopeo, crane) read,
// the same bytes for the same inputs.
//
//	go run ./deploy/image -context .image -o .image/pistrad-image.tar
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	dockerfile := fs.String("f", "deploy/image/Dockerfile", "the image recipe")
	contextDir := fs.String("context", ".image", "the build context: the directory COPY reads from")
	out := fs.String("o", ".image/pistrad-image.tar", "the image tarball to write")
	tag := fs.String("t", "pistra/pistrad:latest", "the name the image is loaded under")
	arch := fs.String("arch", runtime.GOARCH, "the architecture the binary was built for (GOARCH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*dockerfile)
	if err != nil {
		return err
	}
	r, err := parseRecipe(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *dockerfile, err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	digest, err := writeImage(w, r, *contextDir, *arch, *tag)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(*out)
		return fmt.Errorf("%s: %w", *out, err)
	}
	info, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (%s, %.1f MiB)\n", *out, *tag, digest, float64(info.Size())/(1<<20))
	return nil
}
