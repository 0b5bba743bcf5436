// Package proxy is pistrad's attempt loop and relay: for each selected
// candidate it builds an upstream request from scratch, retries on the same
// provider, fails over to the next candidate when the primary provider's
// policy allows, and relays the one answer it settles on, through a
// translator when the candidate speaks the other dialect (translated.go).
// The status is decided before any byte reaches the client, so a failure is
// always a real status the client's SDK can act on.
package proxy

import (
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/tracing"
	"github.com/pistra/pistra/runtime/upstream"
)

// Proxy forwards requests upstream. It is safe for concurrent use.
type Proxy struct {
	// Transport carries every upstream request; see NewTransport.
	Transport http.RoundTripper
	Metrics   *metrics.Metrics
	// MaxRetryWait caps the wait before a retry, whatever the provider's
	// backoff or the upstream's retry-after asks for.
	MaxRetryWait time.Duration
	// Gate admits each candidate just before it is first sent; nil admits
	// every one.
	Gate admission.Gate
	// Circuits hears how each attempt went (the circuit breakers); nil
	// hears nothing.
	Circuits Verdicts
	// Pools picks the member each attempt on a pooled candidate dials;
	// without it such a candidate cannot be served (Prepare).
	Pools Pools
	// MaxAnswerBytes bounds a non-stream answer read whole before it is
	// relayed (DefaultMaxAnswerBytes when 0). A larger one is relayed as
	// it arrives, unchecked and unmetered.
	MaxAnswerBytes int
}

// DefaultMaxAnswerBytes holds the largest answers the APIs give: a long
// completion, or a batch of embeddings in floats.
const DefaultMaxAnswerBytes = 64 << 20

func (p *Proxy) maxAnswer() int {
	if p.MaxAnswerBytes > 0 {
		return p.MaxAnswerBytes
	}
	return DefaultMaxAnswerBytes
}

// Exchange is one client request being served.
type Exchange struct {
	W         http.ResponseWriter
	Client    *http.Request
	RequestID string
	// Route is the inbound route; each candidate's upstream route follows
	// from it.
	Route     plan.Route
	Dialect   dialect.Writer
	Body      *Body
	Upstreams []upstream.Upstream
	// Candidates is the plan's candidate list; Order the indexes selection
	// chose, in attempt order. Skips are the candidates the plan ruled out
	// at build time.
	Candidates []plan.Candidate
	Order      []int
	Skips      []plan.Skip
	// Admission is what the gate is told of the request.
	Admission admission.Request
	// Record receives what the attempt loop did and what the answer was.
	Record *record.Record
	// Trace is the request's span, nil when it is not traced: each
	// attempt is a span under it, each candidate passed over an event.
	Trace *tracing.Request
	// outcome is what the gate is told at settlement; kept here so telling
	// it allocates nothing.
	outcome admission.Outcome
	// pass is the source of an answer relayed as it is (relay); kept here
	// so relaying one allocates nothing.
	pass passSource
	// walk is what was done with the candidates that did not serve.
	walk walk
	// ending is how the relay ended, kept here rather than in the relay's
	// frames, which stay on a stream's stack for as long as it runs.
	ending ending
	// idValue is RequestID as a header value (requestIDValue).
	idValue []string
}

// requestIDValue is x.RequestID as a header value, made once and shared by
// every attempt's upstream request and the client's answer: no holder
// writes into a header's value slice.
func (x *Exchange) requestIDValue() []string {
	if x.idValue == nil {
		x.idValue = []string{x.RequestID}
	}
	return x.idValue
}

// Serve runs the attempt loop for x and relays the answer. Each candidate
// is readied (Prepare), admitted by the gate, then sent with its retries;
// the loop stops at the first good answer, at a failure the primary's
// failover policy does not move on from, or at a client that left. Then
// the request ends one way (conclude).
func (p *Proxy) Serve(x *Exchange) {
	l := loop{moveOn: p.primaryFailover(x), gate: p.Gate}
	if l.gate == nil {
		l.gate = admission.AdmitAll{}
	}
	// No claim outlives the request, a panic included (closeClaim).
	defer l.closeClaim(x)
	if len(x.Skips) > 0 && len(x.Order) > 0 {
		p.countSkipsOf(x, primaryProvider(x)) // a primary the plan ruled out is passed over first
	}
	for _, ci := range x.Order {
		if !p.try(x, &l, ci) {
			break
		}
	}
	p.conclude(x, &l)
}

// Prepare readies candidate c to be sent for x, translating the body when
// c needs it. It reports false when c cannot take the request: this build
// cannot dial it (refusal nil; a pooled candidate when p has no Pools), or
// its translator refuses the body (the refusal says why). The attempt loop
// then moves to the next candidate whatever the failover policy, since
// nothing was sent; preflight asks the same question, so it names the
// candidate the loop would really try. A pooled candidate's member is
// picked once it is admitted (pickMember).
func (p *Proxy) Prepare(x *Exchange, c *plan.Candidate) (ok bool, refusal *dialect.Error) {
	up := &x.Upstreams[c.Provider]
	if !servable(c, up, x.Route) || (p.Pools == nil && up.Pooled(c)) {
		return false, nil
	}
	if e := x.prepareTranslation(c, up); e != nil {
		return false, e
	}
	return true, nil
}

// Unservable is the answer when no candidate for the requested name can be
// served by this build. It is final: the SDKs retry any 5xx unless told
// not to, and no retry of this one can succeed.
func Unservable(requested string) *dialect.Error {
	e := dialect.Errorf(http.StatusNotImplemented, dialect.CodeUnsupportedCandidate,
		"no candidate for %q can be served by this gateway build", requested)
	e.Final = true
	return e
}

// servable is the one place that passes over candidates this build cannot
// serve: a channel that does not serve the route, and a translation pair
// planned for another route than the request's (the compiler plans
// neither).
func servable(c *plan.Candidate, up *upstream.Upstream, inbound plan.Route) bool {
	if c.Translate != plan.TranslateNone && c.Translate.Inbound() != inbound {
		return false
	}
	return up.URL(c, inbound) != nil
}

// primaryFailover is the failover policy that governs the whole request:
// the primary provider's, even while a failover candidate is being tried.
func (p *Proxy) primaryFailover(x *Exchange) upstream.Classes {
	if len(x.Order) == 0 {
		return 0
	}
	return x.Upstreams[primaryProvider(x)].FailoverOn
}

// primaryProvider is the provider whose policy governs x: that of the
// plan's primary candidates, selected or not. When the plan left the
// primary no candidate, the first skip is the primary's (the build lists
// every provider's in failover order, the primary's first), else the
// first candidate's.
func primaryProvider(x *Exchange) int {
	for i := range x.Candidates {
		if c := &x.Candidates[i]; c.Primary {
			return c.Provider
		}
	}
	if len(x.Skips) > 0 {
		return x.Skips[0].Provider
	}
	return x.Candidates[x.Order[0]].Provider
}

// tryCandidate sends c, retrying on the same provider while its retry
// policy allows, and returns the last attempt. A pooled candidate's
// attempts go to the members picked for it: a member that does not take
// the connection hands the attempt to the next of the pick at once, and a
// retry goes to a member not tried yet where there is one (retarget).
//
// When the upstream asks for a longer wait than MaxRetryWait and the
// failure would move the request (moveOn) to another provider later in the
// order, waiting the cap is waiting for an answer the upstream said would
// not come: the loop moves on at once instead, and counts why. ci is c's
// index in x.Candidates.
func (p *Proxy) tryCandidate(x *Exchange, l *loop, ci int, c *plan.Candidate, up *upstream.Upstream) *attempt {
	res, moveOn, m := x.Record, l.moveOn, l.member
	var asked time.Duration // the shortest retry-after the upstream asked for
	for try := 0; ; try++ {
		a := p.send(x, c, up, m, try > 0)
		res.Attempts++
		p.observe(x, c.Provider, a.class)
		if a.class == classNone || a.class == classCanceled {
			return a
		}
		if a.class == classConnect && m.walk() {
			a.discard()
			try-- // not a retry: the request never reached that member
			continue
		}
		ra, askedWait := a.retryAfter()
		if askedWait && ra > 0 && (asked == 0 || ra < asked) {
			asked = ra
		}
		if try >= up.Retry.Max || !up.Retry.On.Has(a.class.failure()) || a.upstreamSaysNoRetry() {
			x.failed(c, a, try, asked)
			return a
		}
		if ra > p.MaxRetryWait && moveOn.Has(a.class.failure()) && x.failoverAfter(ci, c.Provider) {
			p.Metrics.RetrySkipped(up.Name, metrics.RetryAfterOverCap)
			x.failed(c, a, try, asked)
			return a
		}
		wait := p.retryWait(up, try, ra, askedWait)
		repick := m.spent()
		if !repick {
			a.discard()
		}
		if !sleep(x.Client, wait) {
			a.discard()
			return &attempt{class: classCanceled, err: x.Client.Context().Err()}
		}
		// A new pick is asked for once the wait is over, not before it: a
		// picker counts the member it names as busy from then on.
		if repick && !p.repick(x, m, c) {
			x.failed(c, a, try, asked)
			return a
		}
		a.discard()
		p.Metrics.Retry(up.Name, a.class.String())
	}
}

// failoverAfter reports whether a candidate of another provider than prov
// comes after position ci in x's attempt order.
func (x *Exchange) failoverAfter(ci, prov int) bool {
	after := false
	for _, o := range x.Order {
		if after && x.Candidates[o].Provider != prov {
			return true
		}
		after = after || o == ci
	}
	return false
}

// retryWait is the provider's backoff, doubled per retry, or what the
// upstream asked for in retry-after(-ms) (ra, when asked), capped at
// MaxRetryWait.
func (p *Proxy) retryWait(up *upstream.Upstream, try int, ra time.Duration, asked bool) time.Duration {
	d := up.Retry.Backoff << min(try, 16)
	if asked {
		d = ra
	}
	return min(d, p.MaxRetryWait)
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// answerFailure answers after the last attempt failed. When the request
// went to one candidate only, the upstream's own error is relayed (same
// dialect, so the client's SDK reads it as it would from the provider);
// otherwise, or when no upstream answered, the gateway's own error names
// every candidate and how each failed.
func (p *Proxy) answerFailure(x *Exchange, l *loop) {
	last, res := l.last, x.Record
	res.Err = last.err
	res.SetOriginHeader(x.W.Header())
	if last.resp != nil && len(x.walk.steps) == 1 {
		l.member.commit(x, last.resp.StatusCode)
		p.relay(x, last, res)
		return
	}
	last.discard()
	p.answer(x, res, x.exhausted(last))
}

func (p *Proxy) answer(x *Exchange, res *record.Record, e *dialect.Error) {
	res.Refused(e)
	x.Dialect.WriteError(x.W, x.RequestID, e)
}
