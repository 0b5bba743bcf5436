package pool

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
)

// credentialHeaders are the client's credentials, which a picker is never
// sent.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Proxy-Authorization", "Cookie"}

// errNoEndpoint is a picker that answered without naming an endpoint or
// answering in place of one: the protocol allows neither.
var errNoEndpoint = errors.New("the picker named no endpoint")

// ask has t's picker pick among w's members and checks what it names.
func (s *Set) ask(ctx context.Context, t *target, w *watcher, r *Request) (*Pick, *admission.Refusal) {
	if t.picker.client == nil {
		return s.pickerFailed(ctx, t, w, r, t.picker.err)
	}
	q := Query{Header: pickerHeader(r), Body: r.Body, Timeout: t.timeout}
	if r.Subset != "" {
		q.Subset = w.cur.Load().names
	}
	a, err := t.picker.client.Pick(ctx, q)
	if err != nil {
		switch immediateStatus(err) {
		case http.StatusTooManyRequests:
			s.count(t, OutcomeShed)
			return nil, shed(t.provider)
		case http.StatusServiceUnavailable:
			s.count(t, OutcomeNoMember)
			return nil, noMember(t.provider, r.Subset, "has no member ready, its picker says")
		}
		return s.pickerFailed(ctx, t, w, r, err)
	}
	// The set at this moment, not the one the picker was shown: a member
	// DNS dropped meanwhile is not dialled.
	eps, outside := check(w.cur.Load(), a.Endpoints)
	if len(eps)+len(outside) == 0 {
		end(a)
		return s.pickerFailed(ctx, t, w, r, errNoEndpoint)
	}
	if len(outside) > 0 {
		end(a)
		s.log.Warn("pool pick refused: the picker named an address outside the member set; the request goes to the members in turn",
			"provider", t.provider, "picker", t.pool.Picker, "address", outside, "dns", w.name, "subset", r.Subset)
		return s.inTurn(t, w, r, OutcomeRefused)
	}
	s.count(t, OutcomePicked)
	return &Pick{endpoints: untriedFirst(eps, r.Exclude), outcome: OutcomePicked, model: a.Model, stream: a.Stream}, nil
}

// pickerFailed is what a pool does when its picker fails: the members in
// turn when it fails open, else the candidate is refused.
func (s *Set) pickerFailed(ctx context.Context, t *target, w *watcher, r *Request, err error) (*Pick, *admission.Refusal) {
	if ctx.Err() == nil { // a client that left is not the picker's failure
		s.log.Warn("pool picker failed", "provider", t.provider, "picker", t.pool.Picker, "error", err, "fail_open", t.failOpen)
	}
	if t.failOpen {
		return s.inTurn(t, w, r, OutcomeFallback)
	}
	s.count(t, OutcomePickerError)
	// The cause is logged, not told: it names the picker's address.
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodePickerUnavailable,
		"the endpoint picker of provider %q's pool could not pick a member", t.provider)
	e.Transient = true
	return nil, &admission.Refusal{Reason: ReasonPickerUnavailable, Error: e}
}

func shed(provider string) *admission.Refusal {
	e := dialect.Errorf(http.StatusTooManyRequests, dialect.CodePickerShed,
		"the endpoint picker of provider %q's pool shed the request under load", provider)
	e.Transient = true
	return &admission.Refusal{Reason: ReasonPickerShed, Error: e}
}

// end closes the exchange of a pick that is not used.
func end(a *Answer) {
	if a.Stream != nil {
		a.Stream.Done()
	}
}

// pickerHeader is r's headers as the picker sees them: the request id
// set, the credentials gone.
func pickerHeader(r *Request) http.Header {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, k := range credentialHeaders {
		h.Del(k)
	}
	if r.RequestID != "" && h.Get("X-Request-Id") == "" {
		h.Set("X-Request-Id", r.RequestID)
	}
	return h
}

// check splits the endpoints a picker named into the members of m, in its
// order and spelt as m spells them, and the addresses outside it (an
// unreadable one included).
func check(m *members, named []string) (in, outside []string) {
	for _, e := range named {
		ap, ok := parseAddrPort(e)
		name, member := "", false
		if ok {
			name, member = m.has(ap)
		}
		switch {
		case !member:
			outside = append(outside, e)
		case !slices.Contains(in, name):
			in = append(in, name)
		}
	}
	return in, outside
}

// untriedFirst orders eps so the members not in tried come first, each
// part in its order.
func untriedFirst(eps, tried []string) []string {
	if len(tried) == 0 {
		return eps
	}
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		if !slices.Contains(tried, e) {
			out = append(out, e)
		}
	}
	for _, e := range eps {
		if slices.Contains(tried, e) {
			out = append(out, e)
		}
	}
	return out
}
