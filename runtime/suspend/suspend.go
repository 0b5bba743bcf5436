// Package suspend is operators' suspensions of keys, providers, access
// rules, MCP servers and agents: what a suspension is, where the request path looks them up
// (Store, kept durable by the ledger), the admission gate that holds back
// a suspended provider's candidates, the check that refuses a suspended
// key, and the sets of suspended rules routing lifts (Rules).
package suspend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Kind is what a suspension stops.
type Kind string

const (
	KindKey      Kind = "key"      // a client key: its requests are refused
	KindProvider Kind = "provider" // a provider: its candidates are passed over
	KindRule     Kind = "rule"     // an access rule: it denies nothing, whether folded at build or read per request
	// An MCP server or A2A agent: its calls are refused and never sent.
	// Spelt as plan.ServiceKind, so a service's kind names its suspensions.
	KindMCPServer Kind = Kind(plan.KindMCPServer)
	KindAgent     Kind = Kind(plan.KindAgent)
)

// Suspension is one durable suspension, as set on one node and seen on
// all.
type Suspension struct {
	Kind   Kind      `json:"kind"`
	Name   string    `json:"name"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Node   string    `json:"node"` // the ID of the node it was set on
}

// Store keeps suspensions: set and cleared on any node, looked up on the
// request path from the node's own copy.
type Store interface {
	SetSuspension(ctx context.Context, s Suspension) error
	ClearSuspension(ctx context.Context, kind Kind, name string) error
	// Suspended is read on every request: no network.
	Suspended(kind Kind, name string) (Suspension, bool)
	// Suspensions lists every suspension, by kind and name.
	Suspensions() []Suspension
	// SuspensionGeneration moves whenever a suspension is set or cleared
	// (on this node's copy), so what is derived from them can be kept
	// until it does. Read on every request: no network, no lock.
	SuspensionGeneration() uint64
}

// Valid checks that kind name can name a suspension at all.
func Valid(kind Kind, name string) error {
	switch kind {
	case KindKey, KindProvider, KindRule, KindMCPServer, KindAgent:
	default:
		return fmt.Errorf("suspension kind %q: want key, provider, rule, mcp_server or agent", kind)
	}
	if name == "" {
		return fmt.Errorf("a %s suspension needs a name", kind)
	}
	return nil
}

// ErrUndeclared is wrapped for a kind or name the policy does not declare.
var ErrUndeclared = errors.New("nothing to suspend by that name")

// Declared refuses a kind that does not exist or a name graph g does not
// declare, naming what it does declare.
func Declared(g *plan.Graph, kind Kind, name string) error {
	var names []string
	switch kind {
	case KindKey:
		for _, k := range g.Keys {
			names = append(names, k.Name)
		}
	case KindProvider:
		for _, p := range g.Providers {
			names = append(names, p.Name)
		}
	case KindRule:
		names = ruleNames(g)
	case KindMCPServer, KindAgent:
		for _, s := range g.Services(plan.ServiceKind(kind)) {
			names = append(names, s.Name)
		}
	default:
		return fmt.Errorf("%w: kind %q is not one of key, provider, rule, mcp_server, agent", ErrUndeclared, kind)
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("%w: the policy declares no %s %q (it declares: %s)", ErrUndeclared, kind, name, strings.Join(names, ", "))
	}
	return nil
}

// ruleNames lists the access rules of the deployment and every profile.
func ruleNames(g *plan.Graph) []string {
	var names []string
	add := func(rs []plan.Rule) {
		for _, r := range rs {
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	add(g.Rules)
	for _, p := range g.Profiles {
		add(p.Rules)
	}
	return names
}
