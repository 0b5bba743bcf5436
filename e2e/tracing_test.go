package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/server"
	"github.com/pistra/pistra/runtime/tracing"
)

// The client's own trace context, as an instrumented client sends it.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// startTraced serves f with every span recorded.
func startTraced(t *testing.T, f fixture) (*env, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return startWithOptions(t, f, func(o *server.Options) { o.Tracer = tracing.New(tp) }), rec
}

// ended waits for n ended spans: the SERVER span ends once the handler
// has logged the request, which can be after the client read its answer.
func ended(t *testing.T, rec *tracetest.SpanRecorder, n int) (srv sdktrace.ReadOnlySpan, attempts []sdktrace.ReadOnlySpan) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.Ended()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	spans := rec.Ended()
	if len(spans) != n {
		t.Fatalf("%d spans ended, want %d", len(spans), n)
	}
	for _, s := range spans {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			srv = s
		case trace.SpanKindClient:
			attempts = append(attempts, s)
		}
	}
	if srv == nil {
		t.Fatal("no SERVER span")
	}
	slices.SortFunc(attempts, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return srv, attempts
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks that s carries each of want, as its string form.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if g, ok := got[attribute.Key(k)]; !ok || g.Emit() != v {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name(), k, g.Emit(), ok, v)
		}
	}
}

// TestTracesRetryAndFailover: one request that up-openai fails twice
// (the first try and its retry) and backup-openai serves is a SERVER span,
// child of the client's trace context, with three CLIENT spans under it
// in the order sent, each attributed by the GenAI conventions; each
// upstream request carried its own attempt's traceparent.
func TestTracesRetryAndFailover(t *testing.T) {
	e, rec := startTraced(t, defaultPolicy)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	traceparent := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	client := e.openaiClient(keyDefault)
	_, err := client.Chat.Completions.New(context.Background(), chatParams("fast"),
		option.WithHeader("traceparent", traceparent), option.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	srv, attempts := ended(t, rec, 4)
	if got := srv.SpanContext().TraceID().String(); got != clientTraceID {
		t.Errorf("trace id %s, want the client's %s", got, clientTraceID)
	}
	if got := srv.Parent().SpanID().String(); got != clientSpanID || !srv.Parent().IsRemote() {
		t.Errorf("SERVER span's parent %s (remote %v), want the client's span %s", got, srv.Parent().IsRemote(), clientSpanID)
	}
	if srv.Name() != "chat fast" {
		t.Errorf("SERVER span named %q, want %q", srv.Name(), "chat fast")
	}
	wantAttrs(t, srv, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "fast",
		"gen_ai.provider.name": "backup-openai", "gen_ai.response.model": "backup-mini", "http.response.status_code": "200",
		"pistra.profile": "default", "pistra.key": "default", "pistra.attempts": "3", "pistra.failover": "true",
		"pistra.channel_origin": "native", "gen_ai.request.stream": "false"})
	sa := attrs(srv)
	for _, k := range []attribute.Key{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "pistra.plan"} {
		if v, ok := sa[k]; !ok || v.AsInt64() < 0 || (k != "pistra.plan" && v.AsInt64() == 0) {
			t.Errorf("SERVER span %s = %v (set %v)", k, v.Emit(), ok)
		}
	}
	if _, ok := sa["error.type"]; ok || srv.Status().Code == codes.Error {
		t.Errorf("a served request's span has error.type %v, status %v", sa["error.type"].Emit(), srv.Status())
	}

	if len(attempts) != 3 {
		t.Fatalf("%d CLIENT spans, want 3", len(attempts))
	}
	for i, want := range []struct {
		provider, model, status, retry, failover, errType string
	}{
		{"up-openai", "gpt-4o-mini", "503", "false", "false", "5xx"},
		{"up-openai", "gpt-4o-mini", "503", "true", "false", "5xx"},
		{"backup-openai", "backup-mini", "200", "false", "true", ""},
	} {
		a := attempts[i]
		if a.Parent().SpanID() != srv.SpanContext().SpanID() || a.SpanContext().TraceID() != srv.SpanContext().TraceID() {
			t.Errorf("attempt %d is not a child of the SERVER span", i+1)
		}
		if name := "chat " + want.model; a.Name() != name {
			t.Errorf("attempt %d named %q, want %q", i+1, a.Name(), name)
		}
		wantAttrs(t, a, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": want.provider,
			"gen_ai.request.model": want.model, "http.response.status_code": want.status, "pistra.attempt": fmt.Sprint(i + 1),
			"pistra.retry": want.retry, "pistra.failover": want.failover, "server.address": "127.0.0.1", "pistra.tier": "native"})
		if fr := attrs(a)["gen_ai.response.finish_reasons"].AsStringSlice(); (i == 2) != slices.Equal(fr, []string{"stop"}) {
			t.Errorf("attempt %d finish reasons %q, want [stop] on the answer served only", i+1, fr)
		}
		et, failed := attrs(a)["error.type"]
		if et.Emit() != want.errType || failed != (want.errType != "") || (a.Status().Code == codes.Error) != failed {
			t.Errorf("attempt %d: error.type %q (set %v), status %v; want %q", i+1, et.Emit(), failed, a.Status(), want.errType)
		}
	}
	// What each upstream received: the attempt's own context in the
	// client's trace.
	calls := append(e.openai.Requests(), e.backup.Requests()...)
	if len(calls) != 3 {
		t.Fatalf("%d upstream calls, want 3", len(calls))
	}
	for i, c := range calls {
		want := fmt.Sprintf("00-%s-%s-01", clientTraceID, attempts[i].SpanContext().SpanID())
		if got := c.Header.Get("Traceparent"); got != want {
			t.Errorf("upstream call %d traceparent %q, want %q", i+1, got, want)
		}
	}
}

// TestTracesSkipEvent: a failover target the profile's rule excludes is an
// event on the SERVER span with the rule's code; a request every
// candidate failed is an error span naming how.
func TestTracesSkipEvent(t *testing.T) {
	e, rec := startTraced(t, excludedLastPolicy)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: 503})
	e.setFaults(e.backup, fakeprovider.Faults{FailStatus: 503})
	client := e.openaiClient(keyDefault)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"), option.WithMaxRetries(0)); err == nil {
		t.Fatal("every candidate failing was served")
	}
	calls := int(e.openai.Calls() + e.backup.Calls())
	srv, attempts := ended(t, rec, 1+calls)
	if len(attempts) != calls {
		t.Errorf("%d CLIENT spans for %d upstream calls", len(attempts), calls)
	}
	var skips []string
	for _, ev := range srv.Events() {
		if ev.Name != "pistra.candidate.skipped" {
			continue
		}
		m := map[attribute.Key]string{}
		for _, kv := range ev.Attributes {
			m[kv.Key] = kv.Value.Emit()
		}
		skips = append(skips, m["gen_ai.provider.name"]+" "+m["pistra.skip.reason"]+" static="+m["pistra.skip.static"])
	}
	if want := []string{"spare-openai spare_excluded static=true"}; !slices.Equal(skips, want) {
		t.Errorf("skip events %q, want %q", skips, want)
	}
	if et := attrs(srv)["error.type"].Emit(); et != "upstream_error" || srv.Status().Code != codes.Error {
		t.Errorf("SERVER span error.type %q, status %v; want upstream_error, an error", et, srv.Status())
	}
}
