package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/pistra/pistra/runtime/plan"
)

// Call is one request the probe makes: a fixed body on one of the
// channel's routes. The first call of a run is the baseline, a plain
// request the others are compared with.
type Call struct {
	// Name says what the call observes.
	Name  string
	Route plan.Route
	Body  []byte
	// MaxOutput is the output tokens the call allows.
	MaxOutput int
}

// InputTokens estimates the call's input tokens, at four bytes a token
// of body.
func (c Call) InputTokens() int { return (len(c.Body) + 3) / 4 }

// Answer is what one call got back.
type Answer struct {
	Status int
	Body   []byte
}

func (a Answer) ok() bool { return a.Status/100 == 2 }

// refusal describes a non-2xx answer: its status and the message of either
// dialect's error body.
func (a Answer) refusal() string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.Body, &e)
	msg := shorten(e.Error.Message, 120)
	if msg == "" {
		return fmt.Sprintf("refused with %d", a.Status)
	}
	return fmt.Sprintf("refused with %d: %s", a.Status, msg)
}

// answers are a run's answers by call name.
type answers map[string]Answer

// Finding is what the probe concluded about one capability.
type Finding struct {
	Cap      plan.Cap
	Honoured bool
	// Evidence is what was observed, briefly.
	Evidence string
}

// RouteFinding says whether a route the channel declares answered.
type RouteFinding struct {
	Route    plan.Route
	Answered bool
	Evidence string
}

// Report is what one run observed.
type Report struct {
	// Findings are the capabilities probed, in bit order; a capability
	// the dialect has no way to ask for is not among them.
	Findings []Finding
	Routes   []RouteFinding
}

// Preserves is the capabilities the endpoint was seen to honour.
func (r *Report) Preserves() plan.CapSet {
	var s plan.CapSet
	for _, f := range r.Findings {
		if f.Honoured {
			s |= plan.Of(f.Cap)
		}
	}
	return s
}

// Regressions are the findings of capabilities claim preserves that the
// endpoint was seen to drop.
func (r *Report) Regressions(claim plan.CapSet) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if !f.Honoured && claim.Has(f.Cap) {
			out = append(out, f)
		}
	}
	return out
}

// judge concludes about one capability from the answers.
type judge struct {
	cap   plan.Cap
	judge func(answers) Finding
}

// suite is a dialect's calls, baseline first, and the judges of their
// answers.
type suite struct {
	calls  []Call
	judges []judge
}

// Calls are the calls Run makes, in order: the capability calls, then one
// per other declared route that some plan sends a model to.
func (t *Target) Calls() []Call {
	s := t.suite()
	return append(s.calls, t.routeCalls()...)
}

func (t *Target) suite() suite {
	if t.Dialect == plan.DialectAnthropic {
		return messagesSuite(t.Model)
	}
	return chatSuite(t.Model)
}

// Run makes the calls, one at a time, and judges the answers. A call that
// fails in transit or is answered 429 or 5xx ends the run with an error:
// an endpoint that is down or busy shows nothing about its capabilities.
// So does a baseline that is refused.
func (t *Target) Run(ctx context.Context) (*Report, error) {
	got := answers{}
	for i, c := range t.Calls() {
		a, err := t.send(ctx, c)
		switch {
		case err != nil:
			return nil, fmt.Errorf("call %s: %w", c.Name, err)
		case a.Status == http.StatusTooManyRequests || a.Status >= 500:
			return nil, fmt.Errorf("call %s: %s: the endpoint could not be probed now", c.Name, a.refusal())
		case i == 0 && !a.ok():
			return nil, fmt.Errorf("call %s (a plain request): %s", c.Name, a.refusal())
		}
		got[c.Name] = a
	}
	r := &Report{}
	for _, j := range t.suite().judges {
		f := j.judge(got)
		f.Cap = j.cap
		r.Findings = append(r.Findings, f)
	}
	r.Routes = t.judgeRoutes(got)
	return r, nil
}

// maxAnswerBytes bounds what is read of an answer.
const maxAnswerBytes = 4 << 20

// send makes one call on the channel as pistrad would: its URL for the
// route, its credential, its static headers.
func (t *Target) send(ctx context.Context, c Call) (Answer, error) {
	cand := &plan.Candidate{} // the resolved provider has this one channel
	u := t.up.URL(cand, c.Route)
	if u == nil {
		return Answer{}, fmt.Errorf("the channel does not serve %s", c.Route)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(c.Body))
	if err != nil {
		return Answer{}, err
	}
	ch := t.up.Channel(cand)
	for _, h := range ch.StaticHeaders() {
		req.Header.Set(h.Name, h.Value)
	}
	if name, value := ch.Credential(); name != "" {
		req.Header[name] = value
	}
	req.Header.Set("Content-Type", "application/json")
	if t.Dialect == plan.DialectAnthropic && req.Header.Get("Anthropic-Version") == "" {
		req.Header.Set("Anthropic-Version", defaultAnthropicVersion)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return Answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	return Answer{Status: resp.StatusCode, Body: body}, nil
}

// defaultAnthropicVersion is sent when the channel sets none: the version
// every Messages body the probe writes is valid under.
const defaultAnthropicVersion = "2023-06-01"
