// Package tracing is pistrad's OpenTelemetry traces: one SERVER span per
// client request and one CLIENT span per upstream attempt under it (a
// retry and a failover are sibling attempts), candidates passed over as
// events on the request's span, named and attributed by the GenAI
// semantic conventions. W3C trace context is read from the client and
// written upstream as the attempt's.
//
// A nil *Tracer traces nothing: every method is a nil check and returns,
// so a gateway without tracing pays no allocation per request.
package tracing

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/version"
)

// ScopeName is the instrumentation scope of pistrad's spans.
const ScopeName = "github.com/pistra/pistra/runtime/tracing"

// Tracer starts pistrad's spans.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New traces through tp (an SDK provider with its exporters, or a test's
// with a recorder).
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version.String()))}
}

// Request is one client request's SERVER span; nil when not traced.
type Request struct {
	ctx  context.Context
	span trace.Span
	t    *Tracer
}

// Start opens r's SERVER span at start, the child of the trace context
// the client sent, if any. Its name is the route until End names it by
// the GenAI convention, once the model is known.
func (t *Tracer) Start(r *http.Request, start time.Time) *Request {
	if t == nil {
		return nil
	}
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.tracer.Start(ctx, r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(start), trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
			attribute.String("http.route", r.URL.Path)))
	return &Request{ctx: ctx, span: span, t: t}
}

// Decided records what routing settled: the key's name (never the key)
// and the plan's index in the serving graph.
func (q *Request) Decided(key string, planID int) {
	if q == nil {
		return
	}
	q.span.SetAttributes(attribute.String(keyName, key), attribute.Int(planIndex, planID))
}

// Skip records a candidate of provider passed over untried, for reason;
// static when the build ruled it out, not the request.
func (q *Request) Skip(provider, reason string, static bool) {
	if q == nil {
		return
	}
	q.span.AddEvent("pistra.candidate.skipped", trace.WithAttributes(
		attribute.String(providerName, provider), attribute.String(skipReason, reason), attribute.Bool(skipStatic, static)))
}

// End closes the SERVER span from the request's record: op is the GenAI
// operation, model the requested name as a label (a catalog name or
// _OTHER), keyless.
func (q *Request) End(r *record.Record, op, model string, end time.Time) {
	if q == nil {
		return
	}
	s := q.span
	s.SetName(op + " " + model)
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs,
		attribute.String(operationName, op),
		attribute.String(requestModel, model),
		attribute.Int("http.response.status_code", r.Status),
		attribute.String(requestID, r.ID),
		attribute.Int(attempts, r.Attempts),
		attribute.Bool(failover, r.Failover),
		attribute.Bool(requestStream, r.Streamed))
	if r.Profile != "" {
		attrs = append(attrs, attribute.String(profileName, r.Profile))
	}
	if r.Origin != "" {
		attrs = append(attrs, attribute.String(channelOrigin, r.Origin))
	}
	if c := r.Served; c != nil {
		attrs = append(attrs, attribute.String(providerName, r.Provider), attribute.String(responseModel, c.Model))
	}
	if r.Streamed && !r.Sent.IsZero() {
		attrs = append(attrs, attribute.Float64(timeToFirstChunk, r.Sent.Sub(r.Start).Seconds()))
	}
	if r.UsageFrom != meter.SourceNone {
		attrs = usageAttrs(attrs, &r.Usage)
	}
	s.SetAttributes(attrs...)
	if et := r.ErrorType(); et != "" {
		s.SetAttributes(attribute.String(errorType, et))
		// As for any HTTP server span, a client's error (4xx) is an
		// answer, not a failure of the gateway.
		if r.Status >= 500 || r.Cut {
			desc := et
			if r.Err != nil {
				desc = r.Err.Error()
			}
			s.SetStatus(codes.Error, desc)
		}
	}
	s.End(trace.WithTimestamp(end))
}

func usageAttrs(attrs []attribute.KeyValue, u *meter.Usage) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.Int64(inputTokens, int64(u.InputTokens)),
		attribute.Int64(outputTokens, int64(u.OutputTokens)))
	for _, o := range [...]struct {
		k string
		n uint64
	}{{cacheReadTokens, u.CachedInputTokens}, {cacheCreationTokens, u.CacheCreationInputTokens}, {reasoningTokens, u.ReasoningTokens}} {
		if o.n > 0 {
			attrs = append(attrs, attribute.Int64(o.k, int64(o.n)))
		}
	}
	return attrs
}
