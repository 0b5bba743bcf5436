package golden

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// decision is one routing fact a policy author pins: who asks for what
// with which capabilities, and who serves it or how it is refused.
type decision struct {
	Note    string     `json:"note"`
	Profile string     `json:"profile,omitempty"`
	Key     string     `json:"key,omitempty"`
	Route   plan.Route `json:"route"`
	Model   string     `json:"model"`
	Caps    []string   `json:"caps,omitempty"`
	// Suspend names the access rules suspended for the decision.
	Suspend   []string `json:"suspend,omitempty"`
	Want      *served  `json:"want,omitempty"`
	WantError string   `json:"want_error,omitempty"`
}

// served names the candidate that takes a request.
type served struct {
	Provider string    `json:"provider"`
	Channel  string    `json:"channel"`
	Model    string    `json:"model"`
	Tier     plan.Tier `json:"tier"`
	// Origin, when the case gives one, is the claim the decision acted on
	// (what pistrad sends as Pistra-Channel-Origin).
	Origin string `json:"origin,omitempty"`
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
	for i, d := range ds {
		if (d.Want == nil) == (d.WantError == "") {
			t.Errorf("%s[%d] %q: give exactly one of want and want_error", file, i, d.Note)
			continue
		}
		got, refusal, err := decide(g, d)
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

// decide answers a decision with the gateway's own decision
// (route.Attempts): the candidate it would try first, or its refusal code.
func decide(g *plan.Graph, d decision) (served, string, error) {
	prof, err := profileOf(g, d)
	if err != nil {
		return served{}, "", err
	}
	used, err := capSet(d.Caps)
	if err != nil {
		return served{}, "", err
	}
	cands, err := route.Attempts(g, route.Query{Profile: prof, Route: d.Route, Model: d.Model}, d.Key, d.Suspend, used)
	var refusal *dialect.Error
	switch {
	case errors.As(err, &refusal):
		return served{}, string(refusal.Code), nil
	case err != nil:
		return served{}, "", err
	}
	c := &cands[0]
	prov := &g.Providers[c.Provider]
	got := served{Provider: prov.Name, Channel: prov.Channels[c.Channel].Name, Model: c.Model, Tier: c.Tier}
	if d.Want != nil && d.Want.Origin != "" {
		got.Origin = c.Origin
	}
	return got, "", nil
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
