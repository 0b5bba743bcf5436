package a2a_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/pistra/pistra/runtime/a2a"
	"github.com/pistra/pistra/runtime/dialect"
)

const (
	clientKey   = "pk-client-key"
	agentSecret = "agent-secret"
)

// gate admits every call for the one agent it knows, or refuses them all
// with refuse, and records every call and how it closed.
type gate struct {
	target *a2a.Target
	refuse *dialect.Error
	mu     sync.Mutex
	calls  []a2a.Call
	closed []closed
}

type closed struct {
	call a2a.Call
	o    a2a.Outcome
}

func (g *gate) Admit(r *http.Request, agent string, c *a2a.Call) (*a2a.Admission, *dialect.Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, *c)
	if g.refuse != nil {
		return nil, g.refuse
	}
	return &a2a.Admission{Target: g.target, Ticket: ticket{g, *c}}, nil
}

type ticket struct {
	g *gate
	c a2a.Call
}

func (t ticket) Close(o a2a.Outcome) {
	t.g.mu.Lock()
	defer t.g.mu.Unlock()
	t.g.closed = append(t.g.closed, closed{t.c, o})
}

// charged counts the closed calls that drew cost_per_call.
func (g *gate) charged() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.closed {
		if c.o.Answered && c.call.Class.Charged() {
			n++
		}
	}
	return n
}

func (g *gate) outcomes() []closed {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]closed(nil), g.closed...)
}

// gateway serves agent "helper" at /a2a/helper through a proxy with g.
type gateway struct {
	*httptest.Server
	g    *gate
	base string
}

func startGateway(t *testing.T, agentURL string) *gateway {
	t.Helper()
	u, err := url.Parse(agentURL)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{target: &a2a.Target{URL: u, Header: http.Header{"Authorization": {"Bearer " + agentSecret}}}}
	p := &a2a.Proxy{Gate: g}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/helper")
		if !ok {
			http.NotFound(w, r)
			return
		}
		p.Serve(w, r, "helper", "/a2a/helper", rest)
	}))
	t.Cleanup(srv.Close)
	return &gateway{Server: srv, g: g, base: srv.URL + "/a2a/helper"}
}

// post sends a raw JSON-RPC body to the gateway's agent endpoint.
func (gw *gateway) post(t *testing.T, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gw.base, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
