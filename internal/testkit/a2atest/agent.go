// Package a2atest runs a real A2A agent for tests, built with the a2a-go
// SDK's server (JSON-RPC, its agent card, the extended card), on
// 127.0.0.1, and connects a2a-go clients to it or to a gateway in front
// of it. The agent records every request it is sent, so a test can
// assert what reached it and what did not.
//
// What the agent does is read from the first text part of the message
// it is sent:
//
//	echo <text>  answers a message at once, no task
//	work <n>     runs a task: submitted, working, then n artifact
//	             updates, each released by Agent.Step, then completed
//	fail         runs a task that fails at once
package a2atest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// Agent is a running A2A agent.
type Agent struct {
	// URL is the agent's JSON-RPC endpoint, what a catalog names: its
	// root, below which are its card and an HTTP+JSON interface.
	URL   string
	srv   *httptest.Server
	steps chan struct{}
	mu    sync.Mutex
	seen  []Seen
}

// Seen is one request the agent was sent.
type Seen struct {
	HTTPMethod, Path string
	// Method is the JSON-RPC method of a POST's body, as sent.
	Method string
	Header http.Header
}

// Start runs an agent until the test ends.
func Start(t testing.TB) *Agent {
	t.Helper()
	a := &Agent{steps: make(chan struct{})}
	a.srv = httptest.NewUnstartedServer(nil)
	a.URL = "http://" + a.srv.Listener.Addr().String()
	card := a.Card()
	handler := a2asrv.NewHandler(executor{a}, a2asrv.WithExtendedAgentCard(card))
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/{$}", aliases(a2asrv.NewJSONRPCHandler(handler)))
	a.srv.Config.Handler = a.record(mux)
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

// Card is the agent's card: JSON-RPC at URL, streaming, an extended card,
// an HTTP+JSON interface below URL and a gRPC one elsewhere (which a
// gateway must not point clients at).
func (a *Agent) Card() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "a2atest", Description: "an agent for tests", Version: "1",
		URL: a.URL, PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0",
		AdditionalInterfaces: []a2a.AgentInterface{
			{Transport: a2a.TransportProtocolJSONRPC, URL: a.URL},
			{Transport: a2a.TransportProtocolHTTPJSON, URL: a.URL + "/rest"},
			{Transport: a2a.TransportProtocolGRPC, URL: "grpc.elsewhere.invalid:443"},
		},
		Capabilities:                      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:                 []string{"text"},
		DefaultOutputModes:                []string{"text"},
		Skills:                            []a2a.AgentSkill{{ID: "echo", Name: "echo", Tags: []string{"test"}}},
		SupportsAuthenticatedExtendedCard: true,
	}
}

// Step releases the next artifact update of a running "work" task; it
// fails the test when no task takes it within a few seconds.
func (a *Agent) Step(t testing.TB) {
	t.Helper()
	select {
	case a.steps <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Fatal("no task waited for a step")
	}
}

// Seen returns the requests the agent was sent so far.
func (a *Agent) Seen() []Seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Seen(nil), a.seen...)
}

// Calls counts the requests the agent was sent with JSON-RPC method m.
func (a *Agent) Calls(m string) int {
	n := 0
	for _, s := range a.Seen() {
		if s.Method == m {
			n++
		}
	}
	return n
}

// record notes each request, body method included, before serving it.
func (a *Agent) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := Seen{HTTPMethod: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct{ Method string }
			_ = json.Unmarshal(body, &m)
			s.Method = m.Method
		}
		a.mu.Lock()
		a.seen = append(a.seen, s)
		a.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// v1Names are v1.0's method names for the v0.3 ones the SDK serves.
var v1Names = map[string]string{
	"SendMessage": "message/send", "SendStreamingMessage": "message/stream", "GetTask": "tasks/get",
	"CancelTask": "tasks/cancel", "SubscribeToTask": "tasks/resubscribe", "GetExtendedAgentCard": "agent/getAuthenticatedExtendedCard",
}

// aliases serves v1.0's PascalCase method names as the v0.3 ones they
// rename (the SDK speaks v0.3), as agents that accept both do.
func aliases(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var doc map[string]json.RawMessage
		if json.Unmarshal(body, &doc) == nil {
			var m string
			if json.Unmarshal(doc["method"], &m) == nil && v1Names[m] != "" {
				doc["method"], _ = json.Marshal(v1Names[m])
				body, _ = json.Marshal(doc)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// executor runs what a message asks (see the package comment).
type executor struct{ a *Agent }

func (e executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	text := firstText(rc.Message)
	verb, arg, _ := strings.Cut(text, " ")
	switch verb {
	case "echo":
		return q.Write(ctx, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: arg}))
	case "work":
		n, _ := strconv.Atoi(arg)
		return e.work(ctx, rc, q, n)
	case "fail":
		return writeAll(ctx, q, a2a.NewSubmittedTask(rc, rc.Message), final(rc, a2a.TaskStateFailed, "failed at once"))
	}
	return fmt.Errorf("a2atest: no such verb %q", verb)
}

// work runs a task whose artifact updates each wait for a step.
func (e executor) work(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue, n int) error {
	if err := writeAll(ctx, q, a2a.NewSubmittedTask(rc, rc.Message), a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	for i := range n {
		select {
		case <-e.a.steps:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := q.Write(ctx, a2a.NewArtifactEvent(rc, a2a.TextPart{Text: fmt.Sprintf("part %d", i+1)})); err != nil {
			return err
		}
	}
	return q.Write(ctx, final(rc, a2a.TaskStateCompleted, "done"))
}

func (executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, final(rc, a2a.TaskStateCanceled, "canceled"))
}

func final(rc *a2asrv.RequestContext, s a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	ev := a2a.NewStatusUpdateEvent(rc, s, a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: text}))
	ev.Final = true
	return ev
}

func writeAll(ctx context.Context, q eventqueue.Queue, evs ...a2a.Event) error {
	for _, ev := range evs {
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

func firstText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	for _, p := range m.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			return tp.Text
		}
	}
	return ""
}
