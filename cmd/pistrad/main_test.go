package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestUnsignedBundleWarns: a bundle file served without a key to check
// its signature is warned about at start; with a key, or serving the
// compiled-in graph, nothing is said.
func TestUnsignedBundleWarns(t *testing.T) {
	for _, tt := range []struct {
		bundle, key string
		warn        bool
	}{
		{"out/bundle.json", "", true},
		{"out/bundle.json", "signing.pub", false},
		{"", "", false},
	} {
		var buf bytes.Buffer
		warnUnsigned(slog.New(slog.NewJSONHandler(&buf, nil)), tt.bundle, tt.key)
		if got := strings.Contains(buf.String(), `"level":"WARN"`) && strings.Contains(buf.String(), "-bundle-public-key"); got != tt.warn {
			t.Errorf("bundle %q key %q: warned %v, want %v: %s", tt.bundle, tt.key, got, tt.warn, buf.String())
		}
	}
}
