package tracing

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/record"
)

func TestConfigured(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Exporter
		err  string
	}{
		{nil, ExportNone, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, ExportHTTP, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ExportHTTP, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, ExportHTTP, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ExportGRPC, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, ExportGRPC, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, ExportNone, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, ExportNone, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, ExportNone, `OTEL_TRACES_EXPORTER="zipkin"`},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, ExportNone, `"http/json"`},
	} {
		got, err := Configured(func(k string) string { return tc.env[k] })
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: %q, %v; want %q, error containing %q", tc.env, got, err, tc.want, tc.err)
		}
	}
}

// TestOffIsNil: without a tracer every call is a no-op on nil, and an
// upstream request gets no trace header of ours.
func TestOffIsNil(t *testing.T) {
	var tr *Tracer
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	q := tr.Start(r, time.Now())
	if q != nil {
		t.Fatal("a nil tracer started a span")
	}
	q.Decided("k", 1)
	q.Skip("p", "model_denied", true)
	h := r.Header.Clone()
	a := q.Attempt(h, &AttemptStart{})
	if a.On() || len(h) != 0 {
		t.Fatalf("an attempt of an untraced request: on %v, headers %v", a.On(), h)
	}
	a.End(&AttemptEnd{}, time.Now())
	q.End(&record.Record{}, "chat", "gpt", time.Now())
}
