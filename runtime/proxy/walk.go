package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// walk is what the attempt loop did with each candidate it did not serve
// from, kept for the answer when none serves. A request served by its
// first candidate records nothing here.
type walk struct {
	steps []dialect.Attempt
	// wait is the shortest wait that could help: an upstream's
	// retry-after, or a passed-over candidate's time until admission.
	wait time.Duration
	// sent counts the candidates sent; refusedRetry those among them whose
	// upstream said x-should-retry: false on its last try, unstated those
	// that failed without saying how long to wait (a retry may succeed at
	// once), and limited those whose last try was a 429. (int32: a count of
	// candidates, and it keeps an Exchange within 512 bytes.)
	sent, refusedRetry, unstated, limited int32
	// status is what the last candidate sent answered, 0 when nothing.
	status int
}

// step starts the entry of candidate c.
func (x *Exchange) step(c *plan.Candidate) *dialect.Attempt {
	up := &x.Upstreams[c.Provider]
	ch := ""
	if g := x.Admission.Graph; g != nil {
		ch = g.Providers[c.Provider].Channels[c.Channel].Name
	}
	x.walk.steps = append(x.walk.steps, dialect.Attempt{Provider: up.Name, Channel: ch, Model: c.Model})
	return &x.walk.steps[len(x.walk.steps)-1]
}

// passedOver records c as passed over untried for reason; e, when set, is
// the refusal, whose retry-after says when c may be admitted.
func (x *Exchange) passedOver(c *plan.Candidate, reason string, e *dialect.Error) {
	s := x.step(c)
	s.Skipped = reason
	if e != nil && e.RetryAfter > 0 {
		s.RetryAfterMS = e.RetryAfter.Milliseconds()
		x.walk.shorterWait(e.RetryAfter)
	}
}

// failed records c as sent, retried retries times, and failed as a says.
func (x *Exchange) failed(c *plan.Candidate, a *attempt, retries int, wait time.Duration) {
	s := x.step(c)
	s.Failure, s.Retries = a.failureName(), retries
	if a.resp != nil {
		s.Status = a.resp.StatusCode
	}
	x.walk.status = s.Status
	if wait > 0 {
		s.RetryAfterMS = wait.Milliseconds()
		x.walk.shorterWait(wait)
	}
	x.walk.sent++
	switch {
	case a.upstreamSaysNoRetry():
		x.walk.refusedRetry++
	case wait == 0:
		x.walk.unstated++
	}
	if a.class == class429 {
		x.walk.limited++
	}
}

func (w *walk) shorterWait(d time.Duration) {
	if w.wait == 0 || d < w.wait {
		w.wait = d
	}
}

// failureName is how a failed attempt is named to clients.
func (a *attempt) failureName() string {
	if a.broken {
		return "invalid_response"
	}
	return a.class.String()
}

// exhausted is the answer when every candidate sent failed, last being the
// last one's last try: named for that failure, with the status the last
// upstream answered when it did (a client branching on 503 or 529 still
// can), every candidate in the message and in error.pistra.attempts,
// retry-after the shortest wait that could help (none when a candidate
// that may serve a retry at once said no wait) and x-should-retry true
// unless every candidate sent said a retry cannot help.
func (x *Exchange) exhausted(last *attempt) *dialect.Error {
	e := &dialect.Error{Status: http.StatusBadGateway, Code: dialect.CodeUpstreamError}
	if x.walk.status != 0 {
		e.Status = x.walk.status
	}
	switch {
	case x.walk.limited == x.walk.sent:
		e.Code = dialect.CodeUpstreamRateLimited
	case last.class == classTimeout:
		e.Status, e.Code = http.StatusGatewayTimeout, dialect.CodeUpstreamTimeout
	case last.broken:
		e.Code = dialect.CodeUpstreamInvalidResponse
	case last.class == classConnect:
		e.Code = dialect.CodeUpstreamUnreachable
	}
	e.Attempts, e.RetryAfter = x.walk.steps, x.walk.wait
	if x.walk.unstated > 0 {
		// Another candidate's long wait must not tell the SDK to give up,
		// or to wait, when this one may serve the retry now.
		e.RetryAfter = 0
	}
	e.Final = x.walk.refusedRetry == x.walk.sent
	e.Transient = !e.Final
	e.Message = fmt.Sprintf("no candidate could serve %q: %s", x.Body.Requested(), describeWalk(x.walk.steps))
	if last.broken {
		e.Message += fmt.Sprintf("; the last answer could not be used: %v", last.err)
	}
	return e
}

// describeWalk says in words what each step was.
func describeWalk(steps []dialect.Attempt) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d. provider %q channel %q (%s) ", i+1, s.Provider, s.Channel, s.Model)
		switch {
		case s.Skipped != "":
			fmt.Fprintf(&b, "passed over untried: %s", s.Skipped)
		case s.Status != 0:
			fmt.Fprintf(&b, "answered %d (%s)", s.Status, s.Failure)
		default:
			fmt.Fprintf(&b, "failed: %s", s.Failure)
		}
		if s.Retries > 0 {
			fmt.Fprintf(&b, " after %d retries", s.Retries)
		}
		if s.RetryAfterMS > 0 {
			fmt.Fprintf(&b, ", retry after %v", time.Duration(s.RetryAfterMS)*time.Millisecond)
		}
	}
	return b.String()
}

// prepareReason names why Prepare passed a candidate over: its refusal's
// code, or unsupported_candidate for one this build cannot dial.
func prepareReason(e *dialect.Error) string {
	if e != nil {
		return string(e.Code)
	}
	return string(dialect.CodeUnsupportedCandidate)
}

// withWalk adds the walk to e, the refusal answered when no candidate was
// sent, when more than one candidate was passed over: the refusal of the
// first says only why that one was, and another may be admitted sooner.
func (x *Exchange) withWalk(e *dialect.Error) *dialect.Error {
	if len(x.walk.steps) < 2 {
		return e
	}
	out := *e
	out.Attempts = x.walk.steps
	if w := x.walk.wait; w > 0 && w < out.RetryAfter {
		out.RetryAfter = w
	}
	return &out
}

// Verdicts hears, provider by provider, how the attempts went: an
// answer, or a failure that counts against the provider.
type Verdicts interface {
	Success(g *plan.Graph, provider int)
	Failure(g *plan.Graph, provider int)
}

// observe tells p.Circuits how an attempt on provider prov went: an
// answer (any status but a counted failure) is a success; connect, 5xx and
// timeout are failures; a 429 is neither (the provider is up and said when
// to come back) and nor is a client leaving.
func (p *Proxy) observe(x *Exchange, prov int, c class) {
	if p.Circuits == nil {
		return
	}
	switch c {
	case classNone:
		p.Circuits.Success(x.Admission.Graph, prov)
	case classConnect, class5xx, classTimeout:
		p.Circuits.Failure(x.Admission.Graph, prov)
	}
}
