package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// epoch is every timestamp the image holds, so that the same inputs give
// the same bytes and the same digest.
var epoch = time.Unix(0, 0).UTC()

// Media types of the OCI image format.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func describe(media string, b []byte) descriptor {
	sum := sha256.Sum256(b)
	return descriptor{MediaType: media, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: len(b)}
}

// layer is the image's one layer: each COPY's file, owned by root, with
// the directories above it, in the recipe's order.
func layer(r recipe, contextDir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, c := range r.copies {
		var parents []string
		for d := path.Dir(c.dst); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
					return nil, err
				}
			}
		}
		b, err := os.ReadFile(filepath.Join(contextDir, c.src))
		if err != nil {
			return nil, fmt.Errorf("COPY %s: %w", c.src, err)
		}
		info, err := os.Stat(filepath.Join(contextDir, c.src))
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := put(tw, c.dst[1:], mode, b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// config is the image configuration the recipe describes.
func config(r recipe, arch string, layerDigest string) ([]byte, error) {
	ports := map[string]struct{}{}
	for _, p := range r.exposed {
		ports[p] = struct{}{}
	}
	return json.Marshal(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": arch,
		"os":           "linux",
		"config":       map[string]any{"User": r.user, "Entrypoint": r.entrypoint, "ExposedPorts": ports},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
}

// writeImage writes the image as one tar holding both an OCI image layout
// (oci-layout, index.json, blobs/) and the manifest.json `docker load`
// reads, the blobs shared; tag names it.
func writeImage(w io.Writer, r recipe, contextDir, arch, tag string) (string, error) {
	l, err := layer(r, contextDir)
	if err != nil {
		return "", err
	}
	ld := describe(mediaLayer, l)
	c, err := config(r, arch, ld.Digest)
	if err != nil {
		return "", err
	}
	cd := describe(mediaConfig, c)
	m, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaManifest, "config": cd, "layers": []descriptor{ld}})
	if err != nil {
		return "", err
	}
	md := describe(mediaManifest, m)
	_, ref, _ := strings.Cut(tag, ":")
	md.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": tag}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": []descriptor{md}})
	if err != nil {
		return "", err
	}
	blob := func(d descriptor) string { return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:") }
	docker, err := json.Marshal([]map[string]any{{"Config": blob(cd), "RepoTags": []string{tag}, "Layers": []string{blob(ld)}}})
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		b    []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", index}, {"manifest.json", docker},
		{blob(ld), l}, {blob(cd), c}, {blob(md), m},
	} {
		if err := put(tw, f.name, 0o644, f.b); err != nil {
			return "", err
		}
	}
	return md.Digest, tw.Close()
}

// put writes one regular file, owned by root, at the fixed time.
func put(tw *tar.Writer, name string, mode int64, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}
