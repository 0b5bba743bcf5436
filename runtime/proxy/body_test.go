package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// writeHook calls onWrite before each write it discards.
type writeHook struct {
	h       http.Header
	onWrite func()
}

func (w *writeHook) Header() http.Header         { return w.h }
func (w *writeHook) WriteHeader(int)             {}
func (w *writeHook) Write(b []byte) (int, error) { w.onWrite(); return len(b), nil }

// TestRelayHoldsNoBodyBuffers: once an answer is being relayed no attempt
// sends the body again, so its buffers (the client's bytes and the copy
// edited for the upstream's model) are recycled before the client's first
// byte rather than when the stream ends; and only once, however the
// request ends after.
func TestRelayHoldsNoBodyBuffers(t *testing.T) {
	up := testkit.NewUpstream(map[string][]testkit.Reply{testkit.AnyHost: {testkit.SSE(sseEvent, sseDone)}}).Unrecorded()
	ups, err := upstream.Resolve(&plan.Graph{Providers: testProviders()[:1]}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	raw := GetBuffer()
	*raw = append(*raw, `{"model":"fast","stream":true,"messages":[]}`...)
	h, _ := dialect.ReadHead(*raw)
	var body Body
	body.Reset(raw, h.Model)
	body.SetStream(h.Stream)
	writes := 0
	w := &writeHook{h: http.Header{}, onWrite: func() {
		writes++
		if body.raw != nil || body.edit != nil {
			t.Error("the body's buffers are held while the answer is relayed")
		}
	}}
	var res record.Record
	(&Proxy{Transport: up, Metrics: metrics.New()}).Serve(&Exchange{W: w, Client: httptest.NewRequest("POST", "/v1/chat/completions", nil),
		RequestID: "req_1", Route: plan.RouteChatCompletions, Dialect: openai.Dialect{}, Body: &body, Upstreams: ups,
		Candidates: []plan.Candidate{{Provider: 0, Model: "up-model", Primary: true}}, Order: []int{0}, Record: &res})
	if res.Status != http.StatusOK || res.Err != nil || writes == 0 {
		t.Fatalf("status %d err %v after %d writes", res.Status, res.Err, writes)
	}
	if body.Requested() != "fast" {
		t.Errorf("requested model %q after the relay, want what the body said", body.Requested())
	}
	body.Release() // nothing left to recycle: a second put would hand one buffer to two requests
	if body.raw != nil || body.writes != nil {
		t.Error("Release kept the request")
	}
}
