package proxy

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/h1"
	"github.com/pistra/pistra/runtime/plan"
)

// TestCopyClientHeaders: only the allow-listed client headers go upstream,
// minus the hop-by-hop ones, and those meant for one dialect only to
// channels of that dialect.
func TestCopyClientHeaders(t *testing.T) {
	client := http.Header{
		"Authorization":       {"Bearer client-key"},
		"X-Api-Key":           {"client-key"},
		"Connection":          {"keep-alive, x-stainless-hop"},
		"X-Stainless-Hop":     {"1"},
		"X-Stainless-Os":      {"linux"},
		"Anthropic-Beta":      {"a,b"},
		"Anthropic-Version":   {"2023-06-01"},
		"Openai-Organization": {"org-client"},
		"Openai-Project":      {"proj-client"},
		"Proxy-Authorization": {"Basic x"},
		"Te":                  {"trailers"},
		"Cookie":              {"c=1"},
	}
	for d, want := range map[plan.Dialect]http.Header{
		plan.DialectAnthropic: {"X-Stainless-Os": {"linux"}, "Anthropic-Beta": {"a,b"}, "Anthropic-Version": {"2023-06-01"}},
		plan.DialectOpenAI:    {"X-Stainless-Os": {"linux"}},
	} {
		got := http.Header{}
		copyClientHeaders(got, client, d)
		if len(got) != len(want) {
			t.Fatalf("%s channel: forwarded %v, want %v", d, got, want)
		}
		for k := range want {
			if got.Get(k) != want.Get(k) {
				t.Errorf("%s channel: %s %q, want %q", d, k, got.Get(k), want.Get(k))
			}
		}
	}
	delete(client, "Connection") // its list is the one allocation a copy may make
	h := make(http.Header, len(client))
	if n := testing.AllocsPerRun(100, func() { clear(h); copyClientHeaders(h, client, plan.DialectOpenAI) }); n != 0 {
		t.Errorf("%v allocations per copy, want none", n)
	}
}

// TestClientDialectHeadersStayInTheirDialect: an OpenAI client's
// Anthropic headers do not reach its OpenAI upstream; an Anthropic
// client's reach its Anthropic one.
func TestClientDialectHeadersStayInTheirDialect(t *testing.T) {
	header := map[string]string{"Anthropic-Beta": "client-beta", "Anthropic-Version": "2023-06-01"}
	up := testkit.NewUpstream(map[string][]testkit.Reply{"oai.test": {testkit.JSON(200, oaiCompletion)},
		"ant.test": {testkit.JSON(200, antMessage)}})
	call{route: plan.RouteChatCompletions, body: oaiClientBody, header: header, cands: []plan.Candidate{oaiSame}}.serve(t, up)
	call{route: plan.RouteMessages, body: antClientBody, header: header, cands: []plan.Candidate{antSame}}.serve(t, up)
	if h := up.Calls("oai.test")[0].Header; h.Get("Anthropic-Beta") != "" || h.Get("Anthropic-Version") != "" {
		t.Errorf("the OpenAI upstream was sent anthropic-beta %q, anthropic-version %q", h.Get("Anthropic-Beta"), h.Get("Anthropic-Version"))
	}
	if h := up.Calls("ant.test")[0].Header; h.Get("Anthropic-Beta") != "client-beta" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("the Anthropic upstream was sent anthropic-beta %q, anthropic-version %q", h.Get("Anthropic-Beta"), h.Get("Anthropic-Version"))
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
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://up.test/v1/x", b.reader(first))
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
	var cut h1.Cut
	if _, err := roundTrip(context.Background(), up, req, &cut); err != nil {
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
