package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecipe: the shipped recipe is one this builder reads, and it refuses
// what would need a pull or an instruction it does not know.
func TestRecipe(t *testing.T) {
	r := shippedRecipe(t)
	if r.user != "65532:65532" || !slices.Equal(r.entrypoint, []string{"/pistrad"}) || !slices.Equal(r.exposed, []string{"8080/tcp", "8082/tcp"}) ||
		len(r.copies) != 2 || r.copies[1] != (copyStep{"pistrad", "/pistrad"}) {
		t.Errorf("recipe %+v", r)
	}
	for _, bad := range []string{
		"FROM golang:1.26\nCOPY a /a\nENTRYPOINT [\"/a\"]",
		"FROM scratch\nRUN true\nCOPY a /a\nENTRYPOINT [\"/a\"]",
		"FROM scratch\nCOPY a /a\nENTRYPOINT /a",
		"FROM scratch\nCOPY --chown=1 a /a\nENTRYPOINT [\"/a\"]",
		"COPY a /a\nFROM scratch\nENTRYPOINT [\"/a\"]",
		"FROM scratch\nENTRYPOINT [\"/a\"]",
	} {
		if _, err := parseRecipe([]byte(bad)); err == nil {
			t.Errorf("%q: built", bad)
		}
	}
}

// TestImage: the tarball's blobs are named by their digests, the OCI index
// and docker's manifest.json name the same config and layer, the config
// says what the recipe does, the layer holds each file whole with its
// mode, root-owned; two builds are the same bytes.
func TestImage(t *testing.T) {
	ctx := t.TempDir()
	write := func(name string, mode os.FileMode, content string) {
		if err := os.WriteFile(filepath.Join(ctx, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("pistrad", 0o755, "#!binary")
	write("ca-certificates.crt", 0o600, "roots")
	r := shippedRecipe(t)
	var one, two bytes.Buffer
	digest, err := writeImage(&one, r, ctx, "amd64", "pistra/pistrad:test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeImage(&two, r, ctx, "amd64", "pistra/pistrad:test"); err != nil || !bytes.Equal(one.Bytes(), two.Bytes()) {
		t.Errorf("two builds differ (%v)", err)
	}
	files := untar(t, one.Bytes())
	for name, content := range files {
		if sum := sha256.Sum256(content.b); strings.HasPrefix(name, "blobs/sha256/") && hex.EncodeToString(sum[:]) != strings.TrimPrefix(name, "blobs/sha256/") {
			t.Errorf("%s holds content of another digest", name)
		}
	}
	var index struct{ Manifests []descriptor }
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	decode(t, files["index.json"].b, &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != digest {
		t.Fatalf("index %+v, want the manifest %s", index, digest)
	}
	decode(t, files[blobPath(digest)].b, &manifest)
	decode(t, files["manifest.json"].b, &docker)
	if len(docker) != 1 || len(manifest.Layers) != 1 || docker[0].Config != blobPath(manifest.Config.Digest) ||
		!slices.Equal(docker[0].Layers, []string{blobPath(manifest.Layers[0].Digest)}) || !slices.Equal(docker[0].RepoTags, []string{"pistra/pistrad:test"}) {
		t.Fatalf("docker's manifest %+v and the OCI one %+v disagree", docker, manifest)
	}
	var cfg struct {
		Architecture, OS string
		Config           struct {
			User         string
			Entrypoint   []string
			ExposedPorts map[string]struct{}
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	decode(t, files[docker[0].Config].b, &cfg)
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/pistrad"}) ||
		len(cfg.Config.ExposedPorts) != 2 || !slices.Equal(cfg.RootFS.DiffIDs, []string{manifest.Layers[0].Digest}) {
		t.Errorf("config %+v", cfg)
	}
	got := untar(t, files[docker[0].Layers[0]].b)
	if f := got["pistrad"]; string(f.b) != "#!binary" || f.mode != 0o755 {
		t.Errorf("/pistrad: %q mode %o", f.b, f.mode)
	}
	if f := got["etc/ssl/certs/ca-certificates.crt"]; string(f.b) != "roots" || f.mode != 0o644 {
		t.Errorf("the CA roots: %q mode %o", f.b, f.mode)
	}
}

// shippedRecipe is the Dockerfile beside this builder, read.
func shippedRecipe(t *testing.T) recipe {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseRecipe(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type entry struct {
	b    []byte
	mode int64
}

// untar reads a whole tar, refusing one without its end-of-archive
// blocks (Go's reader takes a truncated tar for a whole one) or with an
// entry not owned by root.
func untar(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	if len(b)%512 != 0 || !bytes.HasSuffix(b, make([]byte, 1024)) {
		t.Fatalf("a tar of %d bytes without its end-of-archive blocks", len(b))
	}
	out := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		content, err := io.ReadAll(tr)
		if err != nil || h.Uid != 0 || h.Gid != 0 {
			t.Fatalf("%s: %v, owner %d:%d", h.Name, err, h.Uid, h.Gid)
		}
		out[h.Name] = entry{content, h.Mode}
	}
}

func blobPath(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}
