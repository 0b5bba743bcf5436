package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

func TestDiffSameGraph(t *testing.T) {
	g := bundletest.DefaultPolicy()
	var b strings.Builder
	n, err := Diff(&b, g, cloneGraph(t, g), nil, nil)
	if err != nil || n != 0 {
		t.Fatalf("Diff = %d, %v", n, err)
	}
	if want := "plans: no change\nsettings: no change\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}

// editedGraph changes bundletest.DefaultPolicy the way a policy edit would.
func editedGraph(t *testing.T) *plan.Graph {
	g := cloneGraph(t, bundletest.DefaultPolicy())
	// The compat channel now also keeps usage details.
	keeps := plan.Of(plan.CapExtendedThinking, plan.CapUsageDetails)
	g.Providers[0].Channels[1].Preserves = keeps
	g.Providers[0].Channels[1].VerifiedAt = "2026-12-01"
	g.CandidateLists[0][1].Preserves = keeps
	g.CandidateLists[1][0].Preserves = keeps
	// smart now prefers translation over the compat channel.
	slices.Reverse(g.CandidateLists[1])
	// narrow may use gpt-4o-mini too; nobody reaches claude-haiku-4-5 on messages.
	g.Tables[2].Entries = append(g.Tables[2].Entries, plan.Entry{Route: plan.RouteChatCompletions, Model: "gpt-4o-mini", Plan: 2})
	g.Tables[0].Entries = g.Tables[0].Entries[:2]
	// Settings.
	g.Providers[1].BaseURL = "https://api.openai.com/v1"
	g.Providers[1].Aliases = append(g.Providers[1].Aliases, plan.Alias{Name: "smart", Target: "gpt-4o"})
	g.Providers[1].Failover.On = append(g.Providers[1].Failover.On, "timeout")
	g.Keys[0].Hash = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	g.Keys = append(g.Keys, plan.Key{Name: "ci", Hash: g.Keys[1].Hash, Profile: 3})
	g.Budgets[0].Limit = 3000000
	return g
}

func TestDiffGolden(t *testing.T) {
	a, b := bundletest.DefaultPolicy(), editedGraph(t)
	var out strings.Builder
	n, err := Diff(&out, a, b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Plans: 4 modified (fast and smart for default and lenient), 1 added,
	// 2 removed; settings: 8 changes.
	if n != 15 {
		t.Errorf("changed = %d, want 15", n)
	}
	if strings.Contains(out.String(), "1111111111") || strings.Contains(out.String(), "34e893ad") {
		t.Error("diff printed a key hash")
	}
	golden(t, "diff", out.String())

	// The other way round, the same plans changed.
	out.Reset()
	if back, err := Diff(&out, b, a, nil, nil); err != nil || back != n {
		t.Errorf("reverse Diff = %d, %v; want %d", back, err, n)
	}
}

func TestDiffPrintsEachChangeOverItsPlans(t *testing.T) {
	var out strings.Builder
	if _, err := Diff(&out, bundletest.DefaultPolicy(), editedGraph(t), nil, nil); err != nil {
		t.Fatal(err)
	}
	// One change to the compat channel's claim reaches fast and smart for
	// both default and lenient: it is printed once, over all four plans.
	text := out.String()
	if c := strings.Count(text, "~ candidate fake-anthropic/openai-compat: preserves"); c != 1 {
		t.Errorf("preserves change described %d times, want once:\n%s", c, text)
	}
	want := "~ candidate fake-anthropic/openai-compat: preserves: extended_thinking -> extended_thinking,usage_details\n" +
		"    in 4 plans:\n      default chat_completions fast\n      default chat_completions smart\n" +
		"      lenient chat_completions fast\n      lenient chat_completions smart\n"
	if !strings.Contains(text, want) {
		t.Errorf("want the change followed by every plan it applies to:\n%s\ngot:\n%s", want, text)
	}
}

// cloneGraph deep-copies a graph through its JSON form, as a bundle would.
func cloneGraph(t *testing.T, g *plan.Graph) *plan.Graph {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var out plan.Graph
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestDiffShowsWhatEachChannelSends: a provider-level auth change is shown
// on every channel it moves, with the scheme that channel now sends, and
// a channel's own headers and a provider's TLS options are settings too.
func TestDiffShowsWhatEachChannelSends(t *testing.T) {
	a := bundletest.DefaultPolicy()
	b := cloneGraph(t, a)
	b.Providers[0].Auth = plan.AuthAPIKey
	b.Providers[0].Channels[1].Headers = []plan.Header{{Name: "X-Team", Value: "ml"}}
	b.Providers[1].TLS = &plan.TLS{CAFile: "/etc/pistra/ca.pem"}
	var out strings.Builder
	if _, err := Diff(&out, a, b, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"~ fake-anthropic/native: auth: x-api-key -> api-key",
		"~ fake-anthropic/openai-compat: auth: bearer -> api-key",
		"~ fake-anthropic/openai-compat: headers: +X-Team=ml",
		"~ fake-openai: tls: (none) -> ca_file=/etc/pistra/ca.pem",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
}

// pathPositions places a path by printing it, so a test sees which policy
// value a change was placed at.
type pathPositions struct{}

func (pathPositions) Pos(path ...any) string { return strings.TrimSuffix(fmt.Sprintln(path...), "\n") }

// TestDiffPlacesSkipsAtTheirCause: a skip is placed where the policy causes
// it (the access rule whose code it carries, the profile's allowed_models,
// require_caps or pool_subset), not at the provider it passes over.
func TestDiffPlacesSkipsAtTheirCause(t *testing.T) {
	a := bundletest.DefaultPolicy()
	b := cloneGraph(t, a)
	b.Rules = append(b.Rules, plan.Rule{Name: "maintenance", Code: "maintenance", Static: true})
	b.Profiles[0].Rules = append(b.Profiles[0].Rules, plan.Rule{Name: "no-compat", Code: "compat_denied", Static: true})
	prof := b.Profiles[0].Name
	for _, tc := range []struct {
		reason string
		want   string
	}{
		{"maintenance", "access_rules maintenance"},
		{"compat_denied", "profiles " + prof + " access_rules no-compat"},
		{"model_denied", "profiles " + prof + " allowed_models"},
		{"fidelity_loss", "profiles " + prof + " require_caps"},
		{"pool_subset_missing", "profiles " + prof + " pool_subset"},
		{"not_served", "providers " + b.Providers[0].Name + " channels " + b.Providers[0].Channels[1].Name},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			g := cloneGraph(t, b)
			// Every skip list gains the skip, so every plan has it.
			for i := range g.SkipLists {
				g.SkipLists[i] = append(g.SkipLists[i], plan.Skip{Provider: 0, Channel: 1, Model: "m", Reason: tc.reason})
			}
			var out strings.Builder
			if _, err := Diff(&out, a, g, pathPositions{}, pathPositions{}); err != nil {
				t.Fatal(err)
			}
			want := "+ skip " + channelName(g, 0, 1) + " m " + tc.reason + "\n    at " + tc.want + "\n    in "
			if !strings.Contains(out.String(), want) {
				t.Errorf("diff lacks %q:\n%s", want, out.String())
			}
		})
	}
}
