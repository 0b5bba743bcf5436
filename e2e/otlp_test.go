package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/pistra/pistra/runtime/server"
	"github.com/pistra/pistra/runtime/tracing"
)

// receiver keeps what an OTLP exporter sent it.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is OTLP/HTTP's binary protobuf encoding of the same call.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, err := io.ReadAll(req.Body)
	in := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(b, in)
	}
	if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
		return
	}
	resp, _ := r.Export(req.Context(), in)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// received is every span exported, with its resource's service.name and
// its scope's name.
func (r *receiver) received() (spans []*tracepb.Span, service, scope string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				scope = ss.GetScope().GetName()
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	return spans, service, scope
}

// TestOTLPExport: pistrad's tracer as the OTEL_* environment configures
// it exports over a real OTLP connection to a receiver on loopback, in
// either protocol: the request's SERVER span and its attempt's CLIENT
// span, under the pistrad service.
func TestOTLPExport(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			r := &receiver{}
			endpoint := "http://" + serveReceiver(t, r, protocol)
			if protocol == "http/protobuf" {
				endpoint += "/v1/traces"
			}
			for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": protocol, "OTEL_TRACES_EXPORTER": "", "OTEL_SDK_DISABLED": "",
				"OTEL_SERVICE_NAME": "", "OTEL_RESOURCE_ATTRIBUTES": "", "OTEL_TRACES_SAMPLER": ""} {
				t.Setenv(k, v)
			}
			tr, shutdown, err := tracing.Setup(context.Background())
			if err != nil || tr == nil {
				t.Fatalf("tracing from the environment: %v, %v", tr, err)
			}
			e := startWithOptions(t, defaultPolicy, func(o *server.Options) { o.Tracer = tr })
			client := e.openaiClient(keyDefault)
			if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini")); err != nil {
				t.Fatal(err)
			}
			e.stop() // every request's span has ended
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("flushing spans: %v", err)
			}
			spans, service, scope := r.received()
			if service != "pistrad" || scope != tracing.ScopeName {
				t.Errorf("service.name %q scope %q, want pistrad and %s", service, scope, tracing.ScopeName)
			}
			if len(spans) != 2 {
				t.Fatalf("%d spans received, want 2", len(spans))
			}
			srv, att := spans[0], spans[1]
			if srv.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
				srv, att = att, srv
			}
			if srv.GetKind() != tracepb.Span_SPAN_KIND_SERVER || att.GetKind() != tracepb.Span_SPAN_KIND_CLIENT ||
				string(att.GetParentSpanId()) != string(srv.GetSpanId()) || string(att.GetTraceId()) != string(srv.GetTraceId()) {
				t.Errorf("spans %q (%v) and %q (%v): want a SERVER span and its CLIENT child", srv.GetName(), srv.GetKind(), att.GetName(), att.GetKind())
			}
			if srv.GetName() != "chat gpt-4o-mini" || att.GetName() != "chat gpt-4o-mini" {
				t.Errorf("span names %q, %q", srv.GetName(), att.GetName())
			}
			provider := ""
			for _, kv := range att.GetAttributes() {
				if kv.GetKey() == "gen_ai.provider.name" {
					provider = kv.GetValue().GetStringValue()
				}
			}
			if provider != "up-openai" {
				t.Errorf("CLIENT span gen_ai.provider.name %q, want up-openai", provider)
			}
		})
	}
}

// serveReceiver serves r on loopback in protocol until the test ends and
// returns its address.
func serveReceiver(t *testing.T, r *receiver, protocol string) string {
	t.Helper()
	if protocol == "http/protobuf" {
		s := httptest.NewServer(r)
		t.Cleanup(s.Close)
		return s.Listener.Addr().String()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, r)
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	return ln.Addr().String()
}
