package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
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

// TestPoolFlags: the pool flags reach the server's options, with the
// documented defaults, and bounds that cannot hold are refused.
func TestPoolFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.opts.PoolOptions; p.Resolver != "" || p.MinTTL != time.Second || p.MaxTTL != time.Minute {
		t.Errorf("defaults: %+v", p)
	}
	c, err = parseFlags([]string{"-pool-dns-server", "10.96.0.10:53", "-pool-min-ttl", "5s", "-pool-max-ttl", "5m"})
	if p := c.opts.PoolOptions; err != nil || p.Resolver != "10.96.0.10:53" || p.MinTTL != 5*time.Second || p.MaxTTL != 5*time.Minute {
		t.Errorf("set: %+v, %v", p, err)
	}
	for _, bad := range [][]string{{"-pool-min-ttl", "2m"}, {"-pool-min-ttl", "0s"}} {
		if _, err := parseFlags(bad); err == nil || !strings.Contains(err.Error(), "-pool-max-ttl") {
			t.Errorf("%v: %v, want refused", bad, err)
		}
	}
}
