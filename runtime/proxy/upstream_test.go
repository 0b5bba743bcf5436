package proxy

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

func TestCopyClientHeaders(t *testing.T) {
	client := http.Header{
		"Authorization":       {"Bearer client-key"},
		"X-Api-Key":           {"client-key"},
		"Connection":          {"keep-alive, x-stainless-hop"},
		"X-Stainless-Hop":     {"1"},
		"X-Stainless-Os":      {"linux"},
		"Anthropic-Beta":      {"a,b"},
		"Proxy-Authorization": {"Basic x"},
		"Te":                  {"trailers"},
		"Cookie":              {"c=1"},
	}
	got := http.Header{}
	copyClientHeaders(got, client)
	want := http.Header{"X-Stainless-Os": {"linux"}, "Anthropic-Beta": {"a,b"}}
	if len(got) != len(want) || got.Get("X-Stainless-Os") != "linux" || got.Get("Anthropic-Beta") != "a,b" {
		t.Fatalf("forwarded %v, want %v", got, want)
	}
}

func TestBodyRecyclesOnlyFinishedBuffers(t *testing.T) {
	raw := GetBuffer()
	*raw = append(*raw, `{"model":"pub","x":1}`...)
	f, _ := dialect.FindModel(*raw)
	var b Body
	b.Reset(raw, f)
	if got := string(b.forModel("pub", false)); got != `{"model":"pub","x":1}` {
		t.Fatalf("same model: %s", got)
	}
	first := b.forModel("up-1", false)
	req, err := http.NewRequestWithContext(b.traced(context.Background()), http.MethodPost, "http://up.test/v1/x", b.reader(first))
	if err != nil {
		t.Fatal(err)
	}
	// A write in progress pins the copy: a second model gets a fresh buffer.
	second := b.forModel("up-2", false)
	if string(first) != `{"model":"up-1","x":1}` || string(second) != `{"model":"up-2","x":1}` {
		t.Fatalf("copies %s / %s", first, second)
	}
	w := b.writes
	b.Release()
	if b.raw != nil || w.pending.Load() != 1 {
		t.Fatalf("release with a write in progress")
	}
	// The transport writes the body only now, then reports it written.
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {testkit.JSON(200, `{}`)}})
	if _, err := up.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if got := up.Calls("up.test")[0].Body; got != string(first) {
		t.Fatalf("the upstream was sent %s", got)
	}
	if w.pending.Load() != 0 {
		t.Fatalf("pending %d", w.pending.Load())
	}
}

// TestFailureClassesParse ties the attempt loop's classes to plan's: every
// class a policy can list is one the loop tells apart, and none of the
// outcomes policy cannot name.
func TestFailureClassesParse(t *testing.T) {
	named := map[plan.FailureClass]bool{}
	for c := range classCanceled + 1 {
		f := c.failure()
		if want := c != classNone && c != classCanceled; slices.Contains(plan.FailureClasses, f) != want {
			t.Errorf("class %q: nameable by policy = %v, want %v", c, !want, want)
		}
		named[f] = true
	}
	for _, f := range plan.FailureClasses {
		if !named[f] {
			t.Errorf("policy class %q is not one the attempt loop tells apart", f)
		}
	}
}
