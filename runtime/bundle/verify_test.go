package bundle_test

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

func TestVerifyAccepts(t *testing.T) {
	for name, g := range map[string]*plan.Graph{
		"maximal":   bundletest.Maximal(),
		"synthetic": bundletest.Synthetic(bundletest.Large),
		"empty":     {OnFidelityLoss: plan.LossReject},
	} {
		if err := bundle.Verify(g); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestVerifyRefuses breaks one reference or vocabulary value of a valid
// graph at a time.
func TestVerifyRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *plan.Graph)
		want   string
	}{
		{"provider pool", func(g *plan.Graph) { g.Providers[2].Pool = 2 },
			"providers[2] (vllm).pool: index 2 out of range (2 defined)"},
		{"picker without a bound", func(g *plan.Graph) { g.Pools[0].PickerTimeoutMS = 0 },
			"pools[0] (gpus).picker_timeout_ms: 0, want a bound above 0"},
		{"picker failure mode", func(g *plan.Graph) { g.Pools[1].PickerFailure = "ajar" },
			`pools[1] (sidecar).picker_failure: unknown value "ajar" (known: closed, open)`},
		{"picker settings without a picker", func(g *plan.Graph) { g.Pools[1].Picker = "" },
			"pools[1] (sidecar): picker settings without a picker"},
		{"failover target", func(g *plan.Graph) { g.Providers[0].Failover.To = []int{3} },
			"providers[0] (openai).failover.to[0]: index 3 out of range (3 defined)"},
		{"failover to itself", func(g *plan.Graph) { g.Providers[0].Failover.To = []int{1, 0} },
			"providers[0] (openai).failover.to[1]: a provider cannot fail over to itself"},
		{"profile table", func(g *plan.Graph) { g.Profiles[1].Table = 2 },
			"profiles[1] (eval).table: index 2 out of range (2 defined)"},
		{"profile budget", func(g *plan.Graph) { g.Profiles[1].Budgets = []int{0, -1} },
			"profiles[1] (eval).budgets[1]: index -1 out of range"},
		{"profile rule expression", func(g *plan.Graph) { g.Profiles[1].Rules[0].Expr = 3 },
			"profiles[1] (eval).rules[0] (no-o1).expr: index 3 out of range (3 defined)"},
		{"rule on a cost expression", func(g *plan.Graph) { g.Rules[0].Expr = 0 },
			"rules[0] (embeddings-off).expr: expression 0 is a cost expression, want rule"},
		{"key profile", func(g *plan.Graph) { g.Keys[0].Profile = 2 },
			"keys[0] (ci).profile: index 2 out of range"},
		{"CEL budget without expression", func(g *plan.Graph) { g.Budgets[1].CostExpr = -1 },
			"budgets[1] (weighted).cost_expr: index -1 out of range"},
		{"typed budget with expression", func(g *plan.Graph) { g.Budgets[0].CostExpr = 0 },
			"budgets[0] (daily).cost_expr: is 0, want -1 for cost type TotalToken"},
		{"candidate provider", func(g *plan.Graph) { g.CandidateLists[2][1].Provider = 9 },
			"candidate_lists[2][1].provider: index 9 out of range (3 defined)"},
		{"candidate channel", func(g *plan.Graph) { g.CandidateLists[0][0].Channel = 1 },
			"candidate_lists[0][0].channel (of provider openai): index 1 out of range (1 defined)"},
		{"candidate pool subset", func(g *plan.Graph) { g.CandidateLists[1][0].PoolSubset = "batch" },
			`candidate_lists[1][0].pool_subset: provider vllm has no pool subset "batch"`},
		{"pool subset on a provider without pool", func(g *plan.Graph) { g.CandidateLists[0][0].PoolSubset = "eval" },
			`candidate_lists[0][0].pool_subset: provider openai has no pool subset "eval"`},
		{"skip channel", func(g *plan.Graph) { g.SkipLists[1][0].Channel = 2 },
			"skip_lists[1][0].channel (of provider anthropic): index 2 out of range"},
		{"whole-provider skip", func(g *plan.Graph) { g.SkipLists[1][1].Provider = 3 },
			"skip_lists[1][1].provider: index 3 out of range"},
		{"plan candidates", func(g *plan.Graph) { g.Plans[2].Candidates = 5 },
			"plans[2].candidates: index 5 out of range (5 defined)"},
		{"plan skips", func(g *plan.Graph) { g.Plans[0].Skips = 3 },
			"plans[0].skips: index 3 out of range (3 defined)"},
		{"entry plan", func(g *plan.Graph) { g.Tables[1].Entries[0].Plan = 4 },
			"tables[1].entries[0].plan: index 4 out of range (4 defined)"},
		{"more rules than a rule set tells apart", func(g *plan.Graph) {
			for len(g.Profiles[1].Rules) < plan.MaxProfileRules {
				g.Profiles[1].Rules = append(g.Profiles[1].Rules, g.Profiles[1].Rules[0])
			}
		}, "profiles[1] (eval).rules: held to 65 access rules with the deployment's, more than 64"},
		{"plan with_denied", func(g *plan.Graph) { g.Plans[3].WithDenied = 5 },
			"plans[3].with_denied: index 5 out of range (5 defined)"},
		{"entries out of order by name", func(g *plan.Graph) { g.Tables[0].Entries[1].Model = "a" },
			`tables[0].entries[1]: (chat_completions, "a") must sort after (chat_completions, "fast")`},
		{"entries out of order by route", func(g *plan.Graph) { g.Tables[1].Entries[0].Route = plan.RouteResponses },
			`tables[1].entries[1]: (messages, "claude-sonnet-4") must sort after (responses, "gpt-4o")`},
		{"duplicate entry", func(g *plan.Graph) { g.Tables[0].Entries[1].Model = "fast" },
			`tables[0].entries[1]: (chat_completions, "fast") must sort after (chat_completions, "fast")`},
		{"route sets that disagree with the entries", func(g *plan.Graph) { g.Tables[1].RouteSets[2] = 2 },
			`tables[1].route_sets: [16 0 2 0] does not match the table's entries (want [16 0 1 0])`},
		{"names out of order", func(g *plan.Graph) { g.Names[3] = "b" },
			`names[3]: "b" must sort after "gpt-4o"`},
		{"deployment on_fidelity_loss", func(g *plan.Graph) { g.OnFidelityLoss = "" },
			`on_fidelity_loss: unknown value "" (known: reject, allow)`},
		{"profile on_fidelity_loss", func(g *plan.Graph) { g.Profiles[1].OnFidelityLoss = "Allow" },
			`profiles[1] (eval).on_fidelity_loss: unknown value "Allow" (known: reject, allow)`},
		{"auth scheme", func(g *plan.Graph) { g.Providers[1].Auth = "basic" },
			`providers[1] (anthropic).auth: unknown value "basic" (known: bearer, x-api-key, api-key, x-goog-api-key)`},
		{"retry class", func(g *plan.Graph) { g.Providers[0].Retry.On[2] = "4xx" },
			`providers[0] (openai).retry.on[2]: unknown value "4xx" (known: connect, 5xx, 429, timeout)`},
		{"failover class", func(g *plan.Graph) { g.Providers[0].Failover.On[0] = "500" },
			`providers[0] (openai).failover.on[0]: unknown value "500"`},
		{"circuit failures", func(g *plan.Graph) { g.Providers[0].Circuit.Failures = 0 },
			`providers[0] (openai).circuit.failures: 0; want at least 1`},
		{"circuit probes", func(g *plan.Graph) { g.Providers[0].Circuit.HalfOpenProbes = 64 },
			`providers[0] (openai).circuit.half_open_probes: 64; want 1 to 63`},
		{"budget window", func(g *plan.Graph) { g.Budgets[0].Window = "week" },
			`budgets[0] (daily).window: unknown value "week" (known: minute, hour, day, month)`},
		{"budget scope", func(g *plan.Graph) { g.Budgets[1].Per = "team" },
			`budgets[1] (weighted).per: unknown value "team" (known: key, profile)`},
		{"cost type", func(g *plan.Graph) { g.Budgets[0].CostType = "Tokens" },
			`budgets[0] (daily).cost_type: unknown value "Tokens" (known: InputToken, OutputToken, TotalToken, CachedInputToken, CacheCreationInputToken, ReasoningToken, CEL)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := bundletest.Maximal()
			c.mutate(g)
			err := bundle.Verify(g)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v; want an error containing %q", err, c.want)
			}
		})
	}
}
