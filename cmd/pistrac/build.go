package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pistra/pistra/compiler/codegen"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// generatedLine marks a generated Go file (the Go convention tools and
// reviewers recognise).
var generatedLine = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

func (c *cli) build(args []string) int {
	fs := c.flags("build", "-o DIR [-signing-key FILE] POLICYDIR")
	out := fs.String("o", "", "output `DIR` for the generated files (created if missing)")
	signingKey := fs.String("signing-key", "", "sign the bundle with this ed25519 private key (PEM, PKCS #8; see pistrac keygen)")
	pos, status, ok := c.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	if *out == "" {
		return c.usageError("build", "-o DIR is required")
	}
	g, _, status := c.compileDirWarnings("build", pos[0])
	if g == nil {
		return status
	}
	if *signingKey != "" {
		if err := sign(g, *signingKey); err != nil {
			return c.fail("build", err, exitUsage)
		}
		fmt.Fprintf(c.stdout, "signed %s by key %s\n", g.Digest, bundle.Signer(g))
	}
	files, err := codegen.Generate(g)
	if err != nil {
		return c.fail("build", fmt.Errorf("generating: %w", err), exitFail)
	}
	if err := writeGenerated(*out, files); err != nil {
		return c.fail("build", err, exitUsage)
	}
	return exitOK
}

func (c *cli) check(args []string) int {
	fs := c.flags("check", "[-strict] POLICYDIR")
	strict := fs.Bool("strict", false, "fail (exit 1) on warnings too: what CI should run")
	pos, status, ok := c.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	g, warns, status := c.compileDirWarnings("check", pos[0])
	if g == nil {
		return status
	}
	if *strict && len(warns) > 0 {
		fmt.Fprintf(c.stderr, "pistrac check: %s, refused under -strict\n", plural(len(warns), "warning"))
		return exitFail
	}
	line := fmt.Sprintf("ok: %s (%d distinct) for %s", plural(planCount(g), "plan"), len(g.Plans), plural(len(g.Profiles), "profile"))
	if len(warns) > 0 {
		line += ", " + plural(len(warns), "warning")
	}
	fmt.Fprintln(c.stdout, line)
	return exitOK
}

// plural renders a count with its noun: "1 profile", "2 profiles".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// planCount is the number of (profile, route, name) plans, counting
// shared ones once per profile.
func planCount(g *plan.Graph) int {
	n := 0
	for _, p := range g.Profiles {
		n += len(g.Tables[p.Table].Entries)
	}
	return n
}

// writeGenerated writes files into dir, leaving unchanged files untouched
// (so make sees nothing new), and removes stale generated files so dir
// holds exactly what this build produced.
func writeGenerated(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("generator produced %q, which is not a plain file name", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := writeIfChanged(filepath.Join(dir, name), files[name]); err != nil {
			return err
		}
	}
	return removeStale(dir, files)
}

// writeIfChanged replaces path with data atomically (temporary file and
// rename), unless it already holds exactly data.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// removeStale deletes regular files directly in dir that look generated
// (an extension this build produces, and for Go files the generated
// header) but that this build did not produce. It never recurses, and
// leaves anything else alone.
func removeStale(dir string, files map[string][]byte) error {
	exts := map[string]bool{}
	for name := range files {
		exts[filepath.Ext(name)] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if _, ours := files[name]; ours || !e.Type().IsRegular() || !exts[filepath.Ext(name)] {
			continue
		}
		path := filepath.Join(dir, name)
		if filepath.Ext(name) == ".go" && !hasGeneratedHeader(path) {
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	return nil
}

func hasGeneratedHeader(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && generatedLine.Match(b)
}
