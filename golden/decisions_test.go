package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// decision is one routing fact a policy author pins: who asks for what
// with which capabilities, and who serves it or how it is refused.
type decision struct {
	Note      string     `json:"note"`
	Profile   string     `json:"profile,omitempty"`
	Key       string     `json:"key,omitempty"`
	Route     plan.Route `json:"route"`
	Model     string     `json:"model"`
	Caps      []string   `json:"caps,omitempty"`
	Want      *served    `json:"want,omitempty"`
	WantError string     `json:"want_error,omitempty"`
}

// served names the candidate that takes a request.
type served struct {
	Provider string    `json:"provider"`
	Channel  string    `json:"channel"`
	Model    string    `json:"model"`
	Tier     plan.Tier `json:"tier"`
}

func runDecisions(t *testing.T, g *plan.Graph, file string) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ds []decision
	if err := json.Unmarshal(raw, &ds); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(ds) == 0 {
		t.Fatalf("%s holds no decisions", file)
	}
	progs, err := expr.Load(g.CEL)
	if err != nil {
		t.Fatalf("loading the graph's expressions: %v", err)
	}
	for i, d := range ds {
		if (d.Want == nil) == (d.WantError == "") {
			t.Errorf("%s[%d] %q: give exactly one of want and want_error", file, i, d.Note)
			continue
		}
		got, refusal, err := decide(g, progs, d)
		switch {
		case err != nil:
			t.Errorf("%s[%d] %q: %v", file, i, d.Note, err)
		case d.WantError != "" && refusal != d.WantError:
			t.Errorf("%s[%d] %q: got %s, want refusal %q", file, i, d.Note, describe(got, refusal), d.WantError)
		case d.Want != nil && (refusal != "" || got != *d.Want):
			t.Errorf("%s[%d] %q: got %s, want served by %+v", file, i, d.Note, describe(got, refusal), *d.Want)
		}
	}
}

func describe(s served, refusal string) string {
	if refusal != "" {
		return fmt.Sprintf("refusal %q", refusal)
	}
	return fmt.Sprintf("served by %+v", s)
}

// decide answers a decision the way the gateway does: plan lookup, then
// fidelity selection (plan.Select) on the capabilities used, then the
// access rules that need the key, walking the selected candidates in order.
func decide(g *plan.Graph, progs *expr.Programs, d decision) (served, string, error) {
	prof, err := profileOf(g, d)
	if err != nil {
		return served{}, "", err
	}
	used, err := capSet(d.Caps)
	if err != nil {
		return served{}, "", err
	}
	p, ok := g.Lookup(prof, d.Route, d.Model)
	if !ok {
		return served{}, noPlanReason(g, prof, d), nil
	}
	cands := g.CandidatesOf(p)
	if len(cands) == 0 {
		return served{}, emptyPlanReason(g.SkipsOf(p)), nil
	}
	sel := plan.Select(cands, used, g.Profiles[prof].OnFidelityLoss, nil)
	if sel.Rejected {
		return served{}, "rejected", nil
	}
	rules := append(slices.Clone(g.Rules), g.Profiles[prof].Rules...)
	var denied string
	for _, i := range sel.Attempt {
		c := &cands[i]
		code, err := denyingRule(g, progs, rules, prof, d, c)
		if err != nil {
			return served{}, "", err
		}
		if code == "" {
			prov := &g.Providers[c.Provider]
			return served{Provider: prov.Name, Channel: prov.Channels[c.Channel].Name, Model: c.Model, Tier: c.Tier}, "", nil
		}
		if denied == "" {
			denied = code
		}
	}
	return served{}, denied, nil
}

// denyingRule evaluates the rules left to request time (those reading the
// key) for one candidate and returns the first denying rule's code.
func denyingRule(g *plan.Graph, progs *expr.Programs, rules []plan.Rule, prof int, d decision, c *plan.Candidate) (string, error) {
	prov := &g.Providers[c.Provider]
	attrs := expr.Attrs{Route: string(d.Route), Model: d.Model, UpstreamModel: c.Model, Profile: g.Profiles[prof].Name,
		Key: d.Key, Provider: prov.Name, Channel: prov.Channels[c.Channel].Name}
	for _, r := range rules {
		if r.Static {
			continue // folded into the plan at build time
		}
		deny, err := progs.Rule(r.Expr, attrs)
		if err != nil {
			return "", fmt.Errorf("rule %q: %w", r.Name, err)
		}
		if deny {
			return r.Code, nil
		}
	}
	return "", nil
}

func profileOf(g *plan.Graph, d decision) (int, error) {
	switch {
	case (d.Profile == "") == (d.Key == ""):
		return 0, fmt.Errorf("give exactly one of profile and key")
	case d.Key != "":
		for _, k := range g.Keys {
			if k.Name == d.Key {
				return k.Profile, nil
			}
		}
		return 0, fmt.Errorf("unknown key %q", d.Key)
	}
	for i, p := range g.Profiles {
		if p.Name == d.Profile {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown profile %q", d.Profile)
}

func capSet(names []string) (plan.CapSet, error) {
	var s plan.CapSet
	for _, n := range names {
		c, ok := plan.ParseCap(n)
		if !ok {
			return 0, fmt.Errorf("unknown capability %q (known: %v)", n, plan.CapNames())
		}
		s |= plan.Of(c)
	}
	return s, nil
}

// noPlanReason tells the three "no entry" answers apart: a name the
// catalog does not serve, a name this profile has on other routes only,
// and a name this profile may not use at all.
func noPlanReason(g *plan.Graph, prof int, d decision) string {
	if !g.Known(d.Model) {
		return "unknown_model"
	}
	for _, r := range plan.Routes {
		if _, ok := g.Lookup(prof, r, d.Model); ok {
			return "route_unserved"
		}
	}
	return "model_denied"
}

// emptyPlanReason is why a kept plan has no candidate: the first skip the
// profile itself decided (fidelity_loss, pool_subset_missing, a rule code).
func emptyPlanReason(skips []plan.Skip) string {
	for _, s := range skips {
		switch s.Reason {
		case "not_served", "route_unserved", "model_denied":
		default:
			return s.Reason
		}
	}
	return "model_denied"
}
