package plan

import "slices"

// ServiceKind is what protocol a Service speaks.
type ServiceKind string

const (
	// KindMCPServer is an MCP server over Streamable HTTP.
	KindMCPServer ServiceKind = "mcp_server"
	// KindAgent is an A2A agent.
	KindAgent ServiceKind = "agent"
)

// ServiceKinds lists the kinds in canonical order.
var ServiceKinds = []ServiceKind{KindMCPServer, KindAgent}

// Route is the inbound route a kind's calls arrive on, as access rules
// and the request log name it.
func (k ServiceKind) Route() Route {
	if k == KindAgent {
		return RouteA2A
	}
	return RouteMCP
}

// The routes of agent traffic. They are not in Routes: no table or plan
// serves them, a call is admitted by the profile's lists instead.
const (
	RouteMCP Route = "mcp"
	RouteA2A Route = "a2a"
)

// Service is an MCP server or an A2A agent the gateway fronts: one type
// for both, since they are reached, credentialed and charged alike.
type Service struct {
	Name string      `json:"name"`
	Kind ServiceKind `json:"kind"`
	// URL is the service's endpoint, as the policy wrote it.
	URL string `json:"url"`
	// CredentialEnv names the variable holding the service's secret;
	// empty sends none. Auth is how it is presented (bearer when empty).
	CredentialEnv string     `json:"credential_env,omitempty"`
	Auth          AuthScheme `json:"auth,omitempty"`
	// Headers are static headers sent on every call. Never secrets.
	Headers []Header `json:"headers,omitempty"`
	TLS     *TLS     `json:"tls,omitempty"`
	// TimeoutMS bounds the wait for the response headers; 0 for none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// CostPerCall is what one of an agent's calls draws from each bound
	// budget; an MCP server's calls draw the budget's own (CostOf).
	CostPerCall uint64 `json:"cost_per_call"`
}

// Services is the list of kind k: Graph.MCPServers or Graph.Agents.
func (g *Graph) Services(k ServiceKind) []Service {
	if k == KindAgent {
		return g.Agents
	}
	return g.MCPServers
}

// ServiceNamed is the index of kind k's service name, -1 when none.
func (g *Graph) ServiceNamed(k ServiceKind, name string) int {
	for i, s := range g.Services(k) {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// Allows reports whether the profile's keys may reach service i of kind k.
func (p *Profile) Allows(k ServiceKind, i int) bool {
	list := p.MCPServers
	if k == KindAgent {
		list = p.Agents
	}
	return slices.Contains(list, i)
}

// CostOf is what one call to s draws from budget b: the agent's own
// cost_per_call, or for an MCP server the budget's.
func (s *Service) CostOf(b *Budget) uint64 {
	if s.Kind == KindAgent {
		return s.CostPerCall
	}
	return b.CostPerCall
}
