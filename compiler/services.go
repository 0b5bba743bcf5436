package compiler

import (
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// serviceKinds are the catalog's two blocks of agent-traffic services, in
// the order they are checked and built, with the word messages use.
var serviceKinds = []struct {
	kind  plan.ServiceKind
	field string // the catalog's and a profile's field
	what  string
}{{plan.KindMCPServer, "mcp_servers", "MCP server"}, {plan.KindAgent, "agents", "agent"}}

// services is the catalog block of kind k.
func (s *source) services(k plan.ServiceKind) map[string]srcService {
	if k == plan.KindAgent {
		return s.Agents
	}
	return s.MCPServers
}

// allowed is the profile's list of kind k.
func (p *srcProfile) allowed(k plan.ServiceKind) []string {
	if k == plan.KindAgent {
		return p.Agents
	}
	return p.MCPServers
}

// checkServices checks every MCP server and agent as providers are
// checked: the URL, the credential's variable and scheme, static headers
// (no secrets), TLS and the timeout.
func (c *compiler) checkServices() {
	for _, sk := range serviceKinds {
		services := c.src.services(sk.kind)
		if hasEmpty(services) {
			c.labelErrorf(path(sk.field, ""), "empty %s name", sk.what)
		}
		for _, name := range sortedKeys(services) {
			c.checkService(path(sk.field, name), services[name])
		}
	}
}

func (c *compiler) checkService(at cue.Path, s srcService) {
	c.checkURL(sub(at, "url"), s.URL)
	c.checkAuth(at, s.CredentialEnv, s.Auth)
	c.checkHeaders(sub(at, "headers"), s.Headers)
	if s.TLS != nil {
		c.checkTLSFiles(sub(at, "tls"), s.TLS)
		if strings.HasPrefix(strings.ToLower(s.URL), "http:") {
			c.labelErrorf(sub(at, "tls"), "tls applies to https services, and this one is reached over http (%s)", s.URL)
		}
	}
	if s.Timeout != nil {
		c.duration(sub(at, "timeout"), *s.Timeout)
	}
}

// checkProfileServices checks what a profile lets its keys reach and the
// budgets that bind its agent traffic.
func (c *compiler) checkProfileServices(name string, p srcProfile, budgets []string) {
	for _, sk := range serviceKinds {
		at := path("profiles", name, sk.field)
		known := sortedKeys(c.src.services(sk.kind))
		list := p.allowed(sk.kind)
		for i, s := range list {
			if !slices.Contains(known, s) {
				c.errorf(index(at, i), "unknown %s %q (known: %s)%s", sk.what, s, listOf(known), didYouMean(s, known))
			}
		}
		duplicates(c, at, "", list, func(s string) string { return s }, sk.what)
	}
	at := path("profiles", name, "agent_budgets")
	for i, b := range p.AgentBudgets {
		if !slices.Contains(budgets, b) {
			c.errorf(index(at, i), "unknown budget %q (known: %s)%s", b, listOf(budgets), didYouMean(b, budgets))
		}
	}
	duplicates(c, at, "", p.AgentBudgets, func(s string) string { return s }, "budget")
}

// agentBudgets are the budgets that bind a profile's agent traffic, and
// the field that says so: its agent_budgets, else its budgets.
func agentBudgets(p srcProfile) ([]string, string) {
	if p.AgentBudgets != nil {
		return p.AgentBudgets, "agent_budgets"
	}
	return p.Budgets, "budgets"
}

// reachesServices reports whether a profile lets its keys reach any MCP
// server or agent.
func reachesServices(p srcProfile) bool { return len(p.MCPServers) > 0 || len(p.Agents) > 0 }

// warnServices reports MCP servers and agents no profile lets any key
// reach, and budgets that meter both a profile's LLM tokens and its agent
// calls: one allowance in two units, where a burst of tool calls spends
// the tokens' room (and the other way round).
func (c *compiler) warnServices() {
	for _, sk := range serviceKinds {
		used := map[string]bool{}
		for _, p := range c.src.Profiles {
			for _, s := range p.allowed(sk.kind) {
				used[s] = true
			}
		}
		for _, name := range sortedKeys(c.src.services(sk.kind)) {
			if !used[name] {
				c.labelWarnf(path(sk.field, name), "%s %q is reached by no profile, so no key can call it; list it in a profile's %s", sk.what, name, sk.field)
			}
		}
	}
	for _, name := range sortedKeys(c.src.Profiles) {
		p := c.src.Profiles[name]
		if !reachesServices(p) {
			continue
		}
		bound, field := agentBudgets(p)
		for i, b := range bound {
			if slices.Contains(p.Budgets, b) {
				c.warnf(path("profiles", name, field, i), "budget %q meters both this profile's LLM tokens and its MCP and A2A calls, "+
					"so one allowance mixes two units; give agent traffic its own budget in agent_budgets", b)
			}
		}
	}
}

// buildServices renders the catalog's MCP servers and agents, sorted by
// name.
func (c *compiler) buildServices() {
	for _, sk := range serviceKinds {
		services := c.src.services(sk.kind)
		var out []plan.Service
		for _, name := range sortedKeys(services) {
			s := services[name]
			svc := plan.Service{
				Name: name, Kind: sk.kind, URL: s.URL, CredentialEnv: deref(s.CredentialEnv), Auth: deref(s.Auth),
				Headers: pairs(s.Headers), TLS: buildTLS(s.TLS), TimeoutMS: millis(s.Timeout),
			}
			if sk.kind == plan.KindAgent {
				svc.CostPerCall = s.CostPerCall
			}
			out = append(out, svc)
		}
		if sk.kind == plan.KindAgent {
			c.g.Agents = out
		} else {
			c.g.MCPServers = out
		}
	}
}

// profileServices fills a built profile's services and agent budgets,
// as indexes into the graph's lists.
func (c *compiler) profileServices(out *plan.Profile, src srcProfile) {
	find := func(list []plan.Service, name string) int {
		return slices.IndexFunc(list, func(s plan.Service) bool { return s.Name == name })
	}
	for _, s := range src.MCPServers {
		out.MCPServers = append(out.MCPServers, find(c.g.MCPServers, s))
	}
	for _, s := range src.Agents {
		out.Agents = append(out.Agents, find(c.g.Agents, s))
	}
	if !reachesServices(src) {
		return
	}
	bound, _ := agentBudgets(src)
	for _, b := range bound {
		out.AgentBudgets = append(out.AgentBudgets, slices.IndexFunc(c.g.Budgets, func(x plan.Budget) bool { return x.Name == b }))
	}
}
