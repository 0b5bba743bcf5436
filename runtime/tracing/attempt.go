package tracing

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pistra/pistra/runtime/meter"
)

// Attempt is one upstream attempt's CLIENT span; its zero value traces
// nothing.
type Attempt struct{ span trace.Span }

// AttemptStart is what is known of an attempt as it is sent.
type AttemptStart struct {
	// Operation is the GenAI operation; Provider and Model the
	// candidate's provider and upstream model; Channel and Tier how it is
	// reached; Origin the capability claim routing acted on.
	Operation, Provider, Model, Channel, Tier, Origin string
	URL                                               *url.URL
	// Number counts the request's upstream attempts, from 1; Retry is set
	// when it re-sends to the provider of the attempt before; Failover
	// when its provider is not the primary.
	Number          int
	Retry, Failover bool
	Stream          bool
	Start           time.Time
}

// Attempt opens an attempt's CLIENT span under the request's and writes
// its trace context into h, the upstream request's headers.
func (q *Request) Attempt(h http.Header, s *AttemptStart) Attempt {
	if q == nil {
		return Attempt{}
	}
	attrs := []attribute.KeyValue{
		attribute.String(operationName, s.Operation),
		attribute.String(providerName, s.Provider),
		attribute.String(requestModel, s.Model),
		attribute.Bool(requestStream, s.Stream),
		attribute.Int(attemptNumber, s.Number),
		attribute.Bool(retry, s.Retry),
		attribute.Bool(failover, s.Failover),
		attribute.String(channelName, s.Channel),
		attribute.String(channelTier, s.Tier),
	}
	if s.Origin != "" {
		attrs = append(attrs, attribute.String(channelOrigin, s.Origin))
	}
	if u := s.URL; u != nil {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
		if p, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	ctx, span := q.t.tracer.Start(q.ctx, s.Operation+" "+s.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
	q.t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	return Attempt{span: span}
}

// On reports whether a is traced, so a caller can skip gathering what
// End would be told.
func (a Attempt) On() bool { return a.span != nil }

// AttemptEnd is how an attempt ended.
type AttemptEnd struct {
	// Status is the upstream's HTTP status, 0 when none answered;
	// ErrorType "" on success.
	Status    int
	ErrorType string
	Err       error
	// FirstChunk is the time to a stream's first event, 0 when not a
	// stream; Usage what the served answer reported, nil otherwise.
	FirstChunk time.Duration
	Usage      *meter.Usage
	// FinishReasons are the served answer's, when it was read whole.
	FinishReasons []string
}

// End closes the attempt's span at end.
func (a Attempt) End(e *AttemptEnd, end time.Time) {
	if a.span == nil {
		return
	}
	s := a.span
	attrs := make([]attribute.KeyValue, 0, 12)
	if e.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", e.Status))
	}
	if e.FirstChunk > 0 {
		attrs = append(attrs, attribute.Float64(timeToFirstChunk, e.FirstChunk.Seconds()))
	}
	if e.Usage != nil {
		attrs = usageAttrs(attrs, e.Usage)
	}
	if len(e.FinishReasons) > 0 {
		attrs = append(attrs, attribute.StringSlice(finishReasons, e.FinishReasons))
	}
	if e.ErrorType != "" {
		attrs = append(attrs, attribute.String(errorType, e.ErrorType))
		desc := e.ErrorType
		if e.Err != nil {
			desc = e.Err.Error()
		}
		s.SetStatus(codes.Error, desc)
	}
	s.SetAttributes(attrs...)
	s.End(trace.WithTimestamp(end))
}
