package explain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// section is one kind of setting compared by Diff.
type section struct {
	title   string
	records func(g *plan.Graph) []record
}

// sections lists every setting Diff reports besides the plans themselves.
var sections = []section{
	{"deployment", deploymentRecords},
	{"providers", providerRecords},
	{"channels", channelRecords},
	{"pools", poolRecords},
	{"profiles", profileRecords},
	{"keys", keyRecords},
	{"budgets", budgetRecords},
	{"access rules", func(g *plan.Graph) []record { return ruleRecords(g, g.Rules, []any{"access_rules"}) }},
}

func deploymentRecords(g *plan.Graph) []record {
	return []record{{name: "on_fidelity_loss", at: []any{"on_fidelity_loss"}, fields: []field{{name: "value", value: string(g.OnFidelityLoss)}}}}
}

func providerRecords(g *plan.Graph) []record {
	out := make([]record, len(g.Providers))
	for i := range g.Providers {
		p := &g.Providers[i]
		pool := ""
		if p.Pool >= 0 && p.Pool < len(g.Pools) {
			pool = g.Pools[p.Pool].Name
		}
		models := make([]string, len(p.Models))
		for j, m := range p.Models {
			models[j] = m.Name
			if m.MaxTokens != 0 {
				models[j] += fmt.Sprintf("(max_tokens %d)", m.MaxTokens)
			}
		}
		aliases := make([]string, len(p.Aliases))
		for j, a := range p.Aliases {
			aliases[j] = a.Name + "=" + a.Target
		}
		out[i] = record{name: p.Name, at: []any{"providers", p.Name}, fields: []field{
			{name: "base_url", value: p.BaseURL, key: "base_url"},
			{name: "pool", value: pool, key: "pool"},
			{name: "credential_env", value: p.CredentialEnv, key: "credential_env"},
			{name: "auth", value: string(p.Auth), key: "auth"},
			{name: "headers", value: pairs(p.Headers), list: true, key: "headers"},
			{name: "query", value: pairs(p.Query), list: true, key: "query"},
			{name: "tls", value: tlsText(p.TLS), key: "tls"},
			{name: "models", value: strings.Join(models, ","), list: true, key: "models"},
			{name: "aliases", value: strings.Join(aliases, ","), list: true, key: "aliases"},
			{name: "retries", value: fmt.Sprintf("max %d, backoff %s, on %s",
				p.Retry.Max, shown(millis(p.Retry.BackoffMS)), shown(strings.Join(plan.Names(p.Retry.On), ","))), key: "retries"},
			{name: "timeout", value: millis(p.TimeoutMS), key: "timeout"},
			{name: "failover", value: failover(g, p.Failover), key: "failover"},
			{name: "circuit", value: circuit(p.Circuit), key: "circuit"},
			{name: "stream_usage", value: strconv.FormatBool(p.StreamUsage), key: "stream_usage"},
		}}
	}
	return out
}

func channelRecords(g *plan.Graph) []record {
	var out []record
	for pi := range g.Providers {
		for ci := range g.Providers[pi].Channels {
			p := &g.Providers[pi]
			ch := &p.Channels[ci]
			out = append(out, record{name: channelName(g, pi, ci), at: []any{"providers", p.Name, "channels", ch.Name}, fields: []field{
				{name: "dialect", value: string(ch.Dialect), key: "dialect"},
				{name: "tier", value: string(ch.Tier), key: "tier"},
				{name: "base_url", value: ch.BaseURL, key: "base_url"},
				// What the channel sends, inherited or its own: a change of
				// the provider's default shows on every channel it moves.
				{name: "credential_env", value: p.ChannelCredentialEnv(ci), key: "credential_env"},
				{name: "auth", value: string(p.ChannelAuth(ci)), key: "auth"},
				{name: "headers", value: pairs(ch.Headers), list: true, key: "headers"},
				{name: "query", value: pairs(ch.Query), list: true, key: "query"},
				{name: "model gate", value: strings.Join(ch.ModelGate, ","), list: true, key: "models"},
				{name: "routes", value: strings.Join(routeNames(ch.Routes), ","), list: true, key: "routes"},
				{name: "preserves", value: capsText(ch.Preserves), key: "preserves"},
				{name: "origin", value: ch.Origin, key: "origin"},
				{name: "verified_at", value: ch.VerifiedAt, key: "verified_at"},
				{name: "verified_by", value: ch.VerifiedBy, key: "verified_by"},
			}})
		}
	}
	return out
}

func poolRecords(g *plan.Graph) []record {
	out := make([]record, len(g.Pools))
	for i, p := range g.Pools {
		subsets := make([]string, len(p.Subsets))
		for j, s := range p.Subsets {
			subsets[j] = s.Name + "=" + s.DNS
		}
		out[i] = record{name: p.Name, at: []any{"pools", p.Name}, fields: []field{
			{name: "dns", value: p.DNS, key: "dns"},
			{name: "scheme", value: p.Scheme, key: "scheme"},
			{name: "picker", value: p.Picker, key: "picker"},
			{name: "picker_ca", value: p.PickerCAFile, key: "picker_ca"},
			{name: "picker_plaintext", value: strconv.FormatBool(p.PickerPlaintext), key: "picker_plaintext"},
			{name: "picker_timeout", value: millis(p.PickerTimeoutMS), key: "picker_timeout"},
			{name: "picker_failure", value: string(p.PickerFailure), key: "picker_failure"},
			{name: "subsets", value: strings.Join(subsets, ","), list: true, key: "subsets"},
		}}
	}
	return out
}

func profileRecords(g *plan.Graph) []record {
	out := make([]record, len(g.Profiles))
	for i := range g.Profiles {
		p := &g.Profiles[i]
		budgets := make([]string, 0, len(p.Budgets))
		for _, b := range p.Budgets {
			if b >= 0 && b < len(g.Budgets) {
				budgets = append(budgets, g.Budgets[b].Name)
			}
		}
		rules := make([]string, len(p.Rules))
		for j, r := range p.Rules {
			rules[j] = fmt.Sprintf("%s (%s: %s)", r.Name, r.Code, exprSource(g, r.Expr))
		}
		out[i] = record{name: p.Name, at: []any{"profiles", p.Name}, fields: []field{
			{name: "allowed_models", value: strings.Join(p.AllowedModels, ","), list: true, key: "allowed_models"},
			{name: "require_caps", value: strings.Join(p.RequireCaps.Names(), ","), list: true, key: "require_caps"},
			{name: "pool_subset", value: p.PoolSubset, key: "pool_subset"},
			{name: "on_fidelity_loss", value: string(p.OnFidelityLoss), key: "on_fidelity_loss"},
			{name: "access_rules", value: strings.Join(rules, "; "), key: "access_rules"},
			{name: "budgets", value: strings.Join(budgets, ","), list: true, key: "budgets"},
		}}
	}
	return out
}

// keyRecords shows names and profiles only: a key's hash is reported as
// changed, never printed.
func keyRecords(g *plan.Graph) []record {
	out := make([]record, len(g.Keys))
	for i, k := range g.Keys {
		out[i] = record{name: k.Name, at: []any{"keys", Named(k.Name)}, fields: []field{
			{name: "profile", value: g.Profiles[k.Profile].Name, key: "profile"},
			{name: "hash", value: k.Hash, secret: true, key: "hash"},
		}}
	}
	return out
}

func budgetRecords(g *plan.Graph) []record {
	out := make([]record, len(g.Budgets))
	for i, b := range g.Budgets {
		out[i] = record{name: b.Name, at: []any{"budgets", Named(b.Name)}, fields: []field{
			{name: "limit", value: strconv.FormatUint(b.Limit, 10), key: "limit"},
			{name: "window", value: string(b.Window), key: "window"},
			{name: "per", value: string(b.Per), key: "per"},
			{name: "cost type", value: string(b.CostType), key: "cost.type"},
			{name: "cost expression", value: exprSource(g, b.CostExpr), key: "cost.cel"},
			{name: "cost_per_call", value: strconv.FormatUint(b.CostPerCall, 10), key: "cost_per_call"},
			{name: "cost_per_session", value: strconv.FormatUint(b.CostPerSession, 10), key: "cost_per_session"},
		}}
	}
	return out
}

// ruleRecords renders access rules, declared in the list at at.
func ruleRecords(g *plan.Graph, rules []plan.Rule, at []any) []record {
	out := make([]record, len(rules))
	for i, r := range rules {
		out[i] = record{name: r.Name, at: append(slices.Clone(at), Named(r.Name)), fields: []field{
			{name: "code", value: r.Code, key: "code"},
			{name: "message", value: r.Message, key: "message"},
			{name: "when", value: exprSource(g, r.Expr), key: "when"},
		}}
	}
	return out
}

func exprSource(g *plan.Graph, i int) string {
	if i < 0 || i >= len(g.CEL) {
		return ""
	}
	return g.CEL[i].Source
}

// tlsText lists a provider's TLS options, "" when it has none.
func tlsText(t *plan.TLS) string {
	if t == nil {
		return ""
	}
	var out []string
	for _, f := range []struct{ name, v string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}, {"server_name", t.ServerName}} {
		if f.v != "" {
			out = append(out, f.name+"="+f.v)
		}
	}
	return strings.Join(out, ",")
}

func pairs(hs []plan.Header) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name + "=" + h.Value
	}
	return strings.Join(out, ",")
}

// millis renders a duration the way policies write one ("250ms", "60s").
func millis(ms int64) string {
	switch {
	case ms == 0:
		return ""
	case ms%1000 == 0:
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprintf("%dms", ms)
}

func circuit(c *plan.Circuit) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("open after %d failures, cool down %s, %d half-open probes", c.Failures, millis(c.CoolDownMS), c.HalfOpenProbes)
}

func failover(g *plan.Graph, f plan.Failover) string {
	if len(f.To) == 0 {
		return ""
	}
	to := make([]string, len(f.To))
	for i, p := range f.To {
		to[i] = g.Providers[p].Name
	}
	return fmt.Sprintf("to %s on %s", strings.Join(to, ","), shown(strings.Join(plan.Names(f.On), ",")))
}
