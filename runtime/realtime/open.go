package realtime

import (
	"context"
	"errors"
	"net/http"

	"github.com/coder/websocket"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/upstream"
)

// Opener opens a session's upstream over its candidates in order, the way
// the attempt loop sends a request: each admitted just before it is
// dialled (the session's cost held then), passed over untried when it is
// not, and a failed handshake moves to the next candidate as far as the
// provider's failover classes allow. Once a handshake succeeds the session
// is established and never moves again.
type Opener struct {
	Gate    admission.Gate
	Metrics *metrics.Metrics
}

// Attempt is one session to open.
type Attempt struct {
	Request    *admission.Request
	Upstreams  []upstream.Upstream
	Candidates []plan.Candidate
	Order      []int
	// Target carries the client's query and Live version; its upstream
	// and candidate are set per attempt.
	Target    Target
	RequestID string
	Record    *record.Record
}

// Open returns the established upstream and the ticket it holds, or the
// client's error when no candidate opened.
func (o *Opener) Open(ctx context.Context, a *Attempt) (*websocket.Conn, admission.Ticket, *dialect.Error) {
	var last *dialect.Error
	failed, class := -1, plan.FailureClass("") // the provider whose handshake failed last, and how
	for _, ci := range a.Order {
		c := &a.Candidates[ci]
		up := &a.Upstreams[c.Provider]
		if failed >= 0 && failed != c.Provider && !a.Upstreams[failed].FailoverOn.Has(class) {
			break // not a failure the provider fails over on
		}
		t, no := o.Gate.Admit(a.Request, c)
		if no != nil {
			o.Metrics.FailoverSkipped(up.Name, no.Reason)
			if no.Final {
				return nil, nil, no.Error
			}
			last = no.Error
			continue
		}
		if failed >= 0 && failed != c.Provider {
			o.Metrics.Failover(a.Upstreams[failed].Name, up.Name, string(class))
			a.Record.Failover = true
		}
		a.Target.Upstream, a.Target.Candidate = up, c
		a.Record.Attempts++
		a.Record.Tried = c
		conn, status, err := Dial(ctx, &a.Target, a.RequestID)
		if err == nil {
			a.Record.Served, a.Record.Provider, a.Record.UpstreamStatus = c, up.Name, status
			return conn, t, nil
		}
		t.Release()
		a.Record.Err = err
		last, class = dialError(up.Name, status, err)
		failed = c.Provider
	}
	if last == nil {
		last = dialect.Errorf(http.StatusBadGateway, dialect.CodeNoCandidate, "no candidate can carry a %s session", a.Target.Route)
	}
	return nil, nil, last
}

// dialError is the client's answer to a failed handshake, and its failure
// class ("" for a refusal no failover would change: a 4xx).
func dialError(provider string, status int, err error) (*dialect.Error, plan.FailureClass) {
	switch {
	case status == http.StatusTooManyRequests:
		return dialect.Errorf(http.StatusTooManyRequests, dialect.CodeUpstreamRateLimited,
			"provider %s refused the session: rate limited", provider), plan.Failure429
	case status >= 500:
		return dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamError,
			"provider %s refused the session with HTTP %d", provider, status), plan.Failure5xx
	case status >= 400:
		return dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamError,
			"provider %s refused the session with HTTP %d", provider, status), ""
	case errors.Is(err, context.DeadlineExceeded):
		return dialect.Errorf(http.StatusGatewayTimeout, dialect.CodeUpstreamTimeout,
			"provider %s did not complete the handshake in time", provider), plan.FailureTimeout
	}
	return dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamUnreachable,
		"provider %s could not be reached", provider), plan.FailureConnect
}
