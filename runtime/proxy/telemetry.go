package proxy

import (
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/tracing"
)

// attemptStart is what a's span is opened with: the candidate, how it is
// reached, and where the attempt stands in the request (retry: it
// re-sends to the provider of the attempt before).
func (x *Exchange) attemptStart(a *attempt, req *http.Request, retry bool) *tracing.AttemptStart {
	c := a.cand
	s := &tracing.AttemptStart{Operation: x.Route.Operation(), Provider: a.up.Name, Model: c.Model, Tier: string(c.Tier),
		Origin: c.Origin, URL: req.URL, Number: x.Record.Attempts + 1, Retry: retry, Failover: !c.Primary,
		Stream: x.Body.head.Stream.Stream, Start: a.start}
	if g := x.Admission.Graph; g != nil {
		s.Channel = g.Providers[c.Provider].Channels[c.Channel].Name
	}
	return s
}

// tell records the attempt, once, in gen_ai_client_operation_duration
// (and its time to first chunk when it streamed) and on its span. A
// failed attempt is told its failure class, even when its answer was
// relayed (the one candidate's upstream error); one that served, on its
// relay's end, the request's error type (how the relay ended).
func (a *attempt) tell() {
	if a.told || a.start.IsZero() {
		return
	}
	a.told = true
	now := time.Now()
	errType := ""
	switch {
	case a.class != classNone || a.broken:
		errType = a.failureName()
	case a.served != nil:
		errType = a.served.ErrorType()
	}
	a.metrics.Attempt(a.route.Operation(), a.up.Name, a.cand.Model, errType, now.Sub(a.start), a.firstChunk)
	if !a.span.On() {
		return
	}
	e := tracing.AttemptEnd{ErrorType: errType, Err: a.err, FirstChunk: a.firstChunk}
	if a.resp != nil {
		e.Status = a.resp.StatusCode
	}
	if a.served != nil {
		e.Status = a.served.UpstreamStatus
		if a.served.UsageFrom != 0 {
			e.Usage = &a.served.Usage
		}
		if e.Err == nil {
			e.Err = a.served.Err
		}
		if a.whole && a.head != nil && e.Status/100 == 2 {
			e.FinishReasons = meter.FinishReasons(meter.ShapeOf(a.cand.Translate.Upstream(a.route)), *a.head, nil)
		}
	}
	a.span.End(&e, now)
}
