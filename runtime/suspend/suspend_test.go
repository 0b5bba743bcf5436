package suspend

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// memory is a Store in a map, as a ledger's replica answers it.
type memory map[Kind]map[string]Suspension

func (m memory) SetSuspension(_ context.Context, s Suspension) error {
	if m[s.Kind] == nil {
		m[s.Kind] = map[string]Suspension{}
	}
	m[s.Kind][s.Name] = s
	return nil
}

func (m memory) ClearSuspension(_ context.Context, kind Kind, name string) error {
	delete(m[kind], name)
	return nil
}

func (m memory) Suspended(kind Kind, name string) (Suspension, bool) {
	s, ok := m[kind][name]
	return s, ok
}

func (m memory) Suspensions() []Suspension { return nil }

// SuspensionGeneration never moves: the gate and the checks read
// suspensions one by one, never what is derived from them.
func (m memory) SuspensionGeneration() uint64 { return 0 }

func testGraph() *plan.Graph {
	return &plan.Graph{
		Providers: []plan.Provider{{Name: "primary"}, {Name: "backup"}},
		Keys:      []plan.Key{{Name: "ci-bot"}, {Name: "dev"}},
		Rules:     []plan.Rule{{Name: "no-o1"}},
		Profiles:  []plan.Profile{{Name: "a", Rules: []plan.Rule{{Name: "no-o1"}, {Name: "small"}}}, {Name: "b"}},
	}
}

// TestGateRefusesSuspendedProviders: a suspended primary refuses the
// whole request (Final: it is not quietly replaced by its failover), a
// suspended failover candidate is only passed over; either way the answer
// is a 503 saying the reason, which no SDK should retry.
func TestGateRefusesSuspendedProviders(t *testing.T) {
	st := memory{}
	g := Gate{Store: st}
	r := &admission.Request{Graph: testGraph()}
	primary, backup := &plan.Candidate{Provider: 0, Primary: true}, &plan.Candidate{Provider: 1}
	for _, c := range []*plan.Candidate{primary, backup} {
		if held, no := g.Admit(r, c); held != admission.NothingHeld || no != nil {
			t.Fatalf("nothing suspended: ticket %v, refusal %+v", held, no)
		}
	}
	_ = st.SetSuspension(context.Background(), Suspension{Kind: KindProvider, Name: "primary", Reason: "incident 42"})
	_ = st.SetSuspension(context.Background(), Suspension{Kind: KindProvider, Name: "backup"})
	for _, c := range []struct {
		cand   *plan.Candidate
		final  bool
		reason string
	}{{primary, true, "incident 42"}, {backup, false, "no reason given"}} {
		held, no := g.Admit(r, c.cand)
		if held != nil || no == nil || no.Final != c.final || no.Reason != ReasonProviderSuspended {
			t.Fatalf("provider %d suspended: ticket %v, refusal %+v", c.cand.Provider, held, no)
		}
		if e := no.Error; e.Status != http.StatusServiceUnavailable || e.Code != dialect.CodeProviderSuspended || !e.Final ||
			!strings.HasSuffix(e.Message, "is suspended: "+c.reason) {
			t.Errorf("provider %d: %+v", c.cand.Provider, e)
		}
	}
	_ = st.SetSuspension(context.Background(), Suspension{Kind: KindKey, Name: "primary"})
	_ = st.ClearSuspension(context.Background(), KindProvider, "primary")
	if _, no := g.Admit(r, primary); no != nil {
		t.Errorf("a key's suspension of the same name held the provider back: %+v", no)
	}
}

// TestKeyRefusesSuspendedKeys: a suspended key is refused 403 with the
// reason; another key, or a provider of the key's name, is not.
func TestKeyRefusesSuspendedKeys(t *testing.T) {
	st := memory{}
	g := Gate{Store: st}
	_ = st.SetSuspension(context.Background(), Suspension{Kind: KindKey, Name: "ci-bot", Reason: "leaked"})
	_ = st.SetSuspension(context.Background(), Suspension{Kind: KindProvider, Name: "dev"})
	e := g.Key("ci-bot")
	if e == nil || e.Status != http.StatusForbidden || e.Code != dialect.CodeKeySuspended || e.Message != "the API key is suspended: leaked" {
		t.Fatalf("suspended key: %+v", e)
	}
	if e := g.Key("dev"); e != nil {
		t.Errorf("dev: %+v", e)
	}
}

// TestNoStoreSuspendsNothing: a gateway without a ledger holds nothing
// back.
func TestNoStoreSuspendsNothing(t *testing.T) {
	var g Gate
	if held, no := g.Admit(&admission.Request{Graph: testGraph()}, &plan.Candidate{Primary: true}); held != admission.NothingHeld || no != nil {
		t.Errorf("ticket %v, refusal %+v", held, no)
	}
	if e := g.Key("ci-bot"); e != nil {
		t.Errorf("key: %+v", e)
	}
}

// TestDeclared: only what the policy declares can be suspended, and a
// refusal names what it does declare; rules are the deployment's and
// every profile's, each once.
func TestDeclared(t *testing.T) {
	g := testGraph()
	g.MCPServers = []plan.Service{{Name: "search", Kind: plan.KindMCPServer}}
	g.Agents = []plan.Service{{Name: "planner", Kind: plan.KindAgent}}
	for _, ok := range []struct {
		kind Kind
		name string
	}{{KindKey, "dev"}, {KindProvider, "backup"}, {KindRule, "no-o1"}, {KindRule, "small"}, {KindMCPServer, "search"}, {KindAgent, "planner"}} {
		if err := Declared(g, ok.kind, ok.name); err != nil {
			t.Errorf("%s %s: %v", ok.kind, ok.name, err)
		}
	}
	for _, c := range []struct {
		kind       Kind
		name, want string
	}{
		{KindKey, "primary", `the policy declares no key "primary" (it declares: ci-bot, dev)`},
		{KindRule, "dev", `the policy declares no rule "dev" (it declares: no-o1, small)`},
		{KindMCPServer, "planner", `the policy declares no mcp_server "planner" (it declares: search)`},
		{KindAgent, "search", `the policy declares no agent "search" (it declares: planner)`},
		{"model", "gpt", `kind "model" is not one of key, provider, rule, mcp_server, agent`},
	} {
		err := Declared(g, c.kind, c.name)
		if !errors.Is(err, ErrUndeclared) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want ...%s", c.kind, c.name, err, c.want)
		}
	}
}

// TestValid: a suspension names a known kind and something of it.
func TestValid(t *testing.T) {
	for _, k := range []Kind{KindRule, KindMCPServer, KindAgent} {
		if err := Valid(k, "x"); err != nil {
			t.Error(err)
		}
	}
	if err := Valid("model", "x"); err == nil {
		t.Error("kind model accepted")
	}
	if err := Valid(KindKey, ""); err == nil {
		t.Error("a suspension of no name accepted")
	}
}
