package proxy

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect/openai"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/record"
	"github.com/pistra/pistra/runtime/translate"
)

// settledTicket keeps what its claim was closed on.
type settledTicket struct {
	outcome  *admission.Outcome
	released bool
}

func (t *settledTicket) Release()                    { t.released = true }
func (t *settledTicket) Settle(o *admission.Outcome) { c := *o; t.outcome = &c }

// TestEndingDecisionTable holds each way a relay can end to what the
// record says (status, cut, error), what the client is sent after the
// answer (the dialect's error event or nothing), what is counted, and
// what the claim settles on: always the upstream's status and the usage
// seen, whoever left first.
func TestEndingDecisionTable(t *testing.T) {
	reset := errors.New("connection reset")
	overloaded := errors.New("overloaded_error: Overloaded")
	usage := meter.Usage{InputTokens: 9, OutputTokens: 4, TotalTokens: 13, Reported: true}
	stream := seen{usage: usage, from: meter.SourcePassthrough, told: toldByEvent}
	withReported := stream
	withReported.reported = overloaded
	translated := seen{usage: usage, from: meter.SourceTranslator, told: toldByEvent}
	unread := seen{told: toldByCut}
	tests := []struct {
		name    string
		e       ending
		gone    bool // the client's request context has ended
		verdict verdict
		status  int
		cut     bool
		err     string // in the record's error; "" for none
		event   string // what the client was sent after the answer
		counted string // the stream failure reason counted, "" for none
	}{
		{name: "whole", e: ending{seen: stream}, verdict: complete, status: 200},
		{name: "whole, the client gone after it", e: ending{seen: stream}, gone: true, verdict: complete, status: 200},
		{name: "a read failed after the source had all of it", e: ending{read: reset, seen: translated}, verdict: complete, status: 200},
		{name: "a write failed", e: ending{wrote: reset, read: reset, broken: reset, seen: withReported}, gone: true,
			verdict: clientLeft, status: 499, err: "client write: connection reset"},
		{name: "the upstream's error event, the client hanging up on it", e: ending{broken: errNoTerminal, short: true, seen: withReported},
			gone: true, verdict: upstreamError, status: 200, err: "Overloaded", counted: metrics.StreamUpstreamError},
		{name: "client gone, the read cancelled", e: ending{read: context.Canceled, broken: context.Canceled, seen: stream}, gone: true,
			verdict: clientGone, status: 499, cut: true, err: "client gone mid-answer"},
		{name: "client gone, a read failed the source took as whole", e: ending{read: context.Canceled, seen: translated}, gone: true,
			verdict: clientGone, status: 499, cut: true, err: "client gone mid-answer"},
		{name: "client gone, the stream short", e: ending{broken: errNoTerminal, short: true, seen: stream}, gone: true,
			verdict: clientGone, status: 499, cut: true, err: "client gone mid-answer"},
		{name: "stream broke", e: ending{read: reset, broken: reset, seen: stream}, verdict: upstreamBroke, status: 200, cut: true,
			err: "broke: connection reset", counted: metrics.StreamIncomplete,
			event: `data: {"error":{"message":"the stream from provider \"up\" broke: connection reset","type":"server_error","param":null,"code":"upstream_stream_incomplete"}}` + "\n\n"},
		{name: "stream without its terminal event", e: ending{broken: errNoTerminal, short: true, seen: stream}, verdict: upstreamIncomplete,
			status: 200, cut: true, err: "ended short: the stream ended without its terminal event", counted: metrics.StreamIncomplete,
			event: `data: {"error":{"message":"the stream from provider \"up\" ended without its terminal event","type":"server_error","param":null,"code":"upstream_stream_incomplete"}}` + "\n\n"},
		{name: "translated stream short: told as a passthrough one", e: ending{broken: translate.ErrIncompleteStream, short: true, seen: translated},
			verdict: upstreamIncomplete, status: 200, cut: true, err: translate.ErrIncompleteStream.Error(), counted: metrics.StreamIncomplete,
			event: `data: {"error":{"message":"the stream from provider \"up\" ended without its terminal event","type":"server_error","param":null,"code":"upstream_stream_incomplete"}}` + "\n\n"},
		{name: "translated stream broke: the read failure told", e: ending{read: reset, broken: errors.Join(reset, translate.ErrIncompleteStream), seen: translated},
			verdict: upstreamBroke, status: 200, cut: true, err: translate.ErrIncompleteStream.Error(), counted: metrics.StreamIncomplete,
			event: `data: {"error":{"message":"the stream from provider \"up\" broke: connection reset","type":"server_error","param":null,"code":"upstream_stream_incomplete"}}` + "\n\n"},
		{name: "translated stream unreadable", e: ending{broken: translate.ErrUpstreamEvent, seen: translated},
			verdict: upstreamBroke, status: 200, cut: true, err: translate.ErrUpstreamEvent.Error(), counted: metrics.StreamIncomplete,
			event: `data: {"error":{"message":"the stream from provider \"up\" broke: translate: malformed upstream stream event","type":"server_error","param":null,"code":"upstream_stream_incomplete"}}` + "\n\n"},
		{name: "unread body broke: the cut alone", e: ending{read: reset, broken: reset, seen: unread}, verdict: upstreamBroke,
			status: 200, cut: true, err: "broke: connection reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.e
			d.gone = tt.gone
			if v := d.verdict(); v != tt.verdict {
				t.Fatalf("verdict %d, want %d", v, tt.verdict)
			}
			res, w, m := endOne(t, tt.e, tt.gone)
			if res.Status != tt.status || res.Cut != tt.cut {
				t.Errorf("status %d cut %v, want %d cut %v", res.Status, res.Cut, tt.status, tt.cut)
			}
			if (tt.err == "") != (res.Err == nil) || res.Err != nil && !strings.Contains(res.Err.Error(), tt.err) {
				t.Errorf("error %v, want one with %q", res.Err, tt.err)
			}
			if tt.e.broken != nil && tt.verdict >= upstreamBroke && !errors.Is(res.Err, tt.e.broken) {
				t.Errorf("error %v does not wrap %v", res.Err, tt.e.broken)
			}
			if got := w.Body.String(); got != tt.event {
				t.Errorf("client sent after the answer %q, want %q", got, tt.event)
			}
			for _, reason := range []string{metrics.StreamIncomplete, metrics.StreamUpstreamError} {
				want := 0.0
				if reason == tt.counted {
					want = 1
				}
				if n := testkit.Counter(t, m.Registry(), "pistra_stream_failures_total", map[string]string{"reason": reason}); n != want {
					t.Errorf("%s counted %v, want %v", reason, n, want)
				}
			}
			if res.Usage != tt.e.usage || res.UsageFrom != tt.e.from {
				t.Errorf("usage %+v from %v, want %+v from %v", res.Usage, res.UsageFrom, tt.e.usage, tt.e.from)
			}
		})
	}
}

// endOne ends a relay of provider "up"'s 200 with e, its client gone or
// not, closes the claim held for it, and checks what the claim settled on.
func endOne(t *testing.T, e ending, gone bool) (*record.Record, *httptest.ResponseRecorder, *metrics.Metrics) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if gone {
		cancel()
	}
	w := httptest.NewRecorder()
	res := &record.Record{Status: 200, UpstreamStatus: 200, Served: &plan.Candidate{Model: "m"}}
	x := &Exchange{W: w, Client: httptest.NewRequestWithContext(ctx, "POST", "/v1/chat/completions", nil), RequestID: "req_e",
		Route: plan.RouteChatCompletions, Dialect: openai.Dialect{}, Record: res}
	m := metrics.New()
	(&Proxy{Metrics: m}).end(x, "up", &e)
	ticket := &settledTicket{}
	l := loop{held: ticket}
	l.closeClaim(x)
	if ticket.released || ticket.outcome == nil || ticket.outcome.Status != 200 || ticket.outcome.Usage != e.usage {
		t.Errorf("claim released %v, settled on %+v; want settled on 200 and %+v", ticket.released, ticket.outcome, e.usage)
	}
	l.closeClaim(x)
	if ticket.released {
		t.Error("the claim was closed twice")
	}
	return res, w, m
}
