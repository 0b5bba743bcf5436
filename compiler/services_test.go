package compiler

import (
	"reflect"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// TestServicesBuild: MCP servers and agents reach the graph sorted by
// name with everything the policy said of them, and each profile names
// what it may reach and the budgets its agent calls draw on.
func TestServicesBuild(t *testing.T) {
	dir := writePolicy(t, map[string]string{"policy.cue": `package policy
providers: openai: {
	base_url: "https://api.openai.com/v1"
	models: "gpt-4o": {}
	channels: native: {dialect: "openai", tier: "native"}
}
mcp_servers: {
	wiki: url: "https://wiki.internal/mcp"
	search: {
		url: "https://search.internal/mcp"
		credential_env: "SEARCH_TOKEN"
		auth: "x-api-key"
		headers: "x-team": "platform"
		tls: ca_file: "/etc/pistra/search-ca.pem"
		timeout: "30s"
	}
}
agents: planner: {url: "https://planner.internal", cost_per_call: 4}
budgets: [
	{name: "tokens", limit: 1000, window: "day"},
	{name: "calls", limit: 50, window: "day"},
]
profiles: {
	split: {budgets: ["tokens"], agent_budgets: ["calls"], mcp_servers: ["wiki", "search"], agents: ["planner"]}
	shared: {budgets: ["tokens"], mcp_servers: ["search"]}
	llm: budgets: ["tokens"]
}
keys: []
`})
	g := mustCompile(t, dir)
	want := []plan.Service{
		{Name: "search", Kind: plan.KindMCPServer, URL: "https://search.internal/mcp", CredentialEnv: "SEARCH_TOKEN", Auth: plan.AuthXAPIKey,
			Headers: []plan.Header{{Name: "x-team", Value: "platform"}}, TLS: &plan.TLS{CAFile: "/etc/pistra/search-ca.pem"}, TimeoutMS: 30000},
		{Name: "wiki", Kind: plan.KindMCPServer, URL: "https://wiki.internal/mcp"},
	}
	if !reflect.DeepEqual(g.MCPServers, want) {
		t.Errorf("MCP servers:\n got %+v\nwant %+v", g.MCPServers, want)
	}
	if len(g.Agents) != 1 || g.Agents[0].Name != "planner" || g.Agents[0].Kind != plan.KindAgent || g.Agents[0].CostPerCall != 4 {
		t.Errorf("agents: %+v", g.Agents)
	}
	profiles := map[string]plan.Profile{}
	for _, p := range g.Profiles {
		profiles[p.Name] = p
	}
	calls, tokens := 0, 1 // budgets are sorted by name
	for name, w := range map[string]struct{ mcp, agents, budgets []int }{
		"split":  {[]int{1, 0}, []int{0}, []int{calls}},
		"shared": {[]int{0}, nil, []int{tokens}},
		"llm":    {nil, nil, nil},
	} {
		p := profiles[name]
		if !reflect.DeepEqual(p.MCPServers, w.mcp) || !reflect.DeepEqual(p.Agents, w.agents) || !reflect.DeepEqual(p.AgentBudgets, w.budgets) {
			t.Errorf("%s: mcp %v agents %v agent budgets %v, want %v %v %v", name, p.MCPServers, p.Agents, p.AgentBudgets, w.mcp, w.agents, w.budgets)
		}
	}
	if g.Budgets[calls].Name != "calls" || g.Budgets[calls].CostPerCall != 1 {
		t.Errorf("budget %+v: cost_per_call defaults to 1", g.Budgets[calls])
	}
}
