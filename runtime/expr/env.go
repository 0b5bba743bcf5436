// Package expr is the one definition of pistra's two CEL environments: budget
// cost expressions and access-rule conditions. pistrac compiles and checks
// expressions here at build time; pistrad loads the checked ASTs here and only
// evaluates them, so the two sides can never disagree about what a variable is.
package expr

import (
	"fmt"
	"sort"
	"sync"

	"cel.dev/cel-go/cel"
)

// Kinds, matching plan.Expr.Kind.
const (
	KindCost = "cost"
	KindRule = "rule"
)

// Served is the pair a cost expression prices besides the tokens: the model
// actually sent upstream and the provider that served it, always of the
// same real request.
type Served struct {
	Model, Backend string
}

// Attrs is what an access-rule condition sees. Model is the name the client
// asked for; UpstreamModel is the name sent to the provider.
type Attrs struct {
	Route, Model, UpstreamModel, Profile, Key, Provider, Channel string
	// Service and Method are an MCP or A2A call's: the server or agent
	// called and the JSON-RPC method; empty for an LLM request.
	Service, Method string
}

// perCallCostLimit bounds the work one evaluation may do. The expressions are
// arithmetic over a handful of scalars, so any honest expression stays far
// below it; it exists to stop a pathological one (a comprehension over a big
// literal, a regex over a long string) from eating the request path.
const perCallCostLimit = 100_000

// maxStringLen is the size assumed for every string variable when estimating
// cost at build time. Model, provider and key names are short identifiers.
const maxStringLen = 1024

// variable is one declared name of an environment, and what it holds
// (documented in schema/policy.cue from Variables).
type variable struct {
	name string
	typ  *cel.Type
	doc  string
}

// environment is one kind's CEL environment, built once on first use.
type environment struct {
	kind string
	// what names an expression of this kind in messages.
	what string
	vars []variable
	// names is vars' names, sorted, for messages.
	names []string

	once sync.Once
	env  *cel.Env
	err  error
}

// The variables below are the whole contract of each kind; the activations in
// activation.go resolve exactly these names.
var (
	costEnv = newEnvironment(KindCost, "cost expression", []variable{
		{"model", cel.StringType, "the upstream model that served (its provider's resolution)"},
		{"backend", cel.StringType, "the provider that served, by its name under providers"},
		{"input_tokens", cel.UintType, "input tokens, cache reads and writes included"},
		{"cached_input_tokens", cel.UintType, "the part of input_tokens read from the prompt cache"},
		{"cache_creation_input_tokens", cel.UintType, "the part of input_tokens written to the prompt cache"},
		{"output_tokens", cel.UintType, "output tokens, reasoning included"},
		{"total_tokens", cel.UintType, "input_tokens plus output_tokens"},
		{"reasoning_tokens", cel.UintType, "the part of output_tokens spent reasoning"},
	})
	ruleEnv = newEnvironment(KindRule, "access rule condition", []variable{
		{"route", cel.StringType, "the inbound route (chat_completions, messages, ...)"},
		{"model", cel.StringType, "the name the client asked for: a model or an alias"},
		{"upstream_model", cel.StringType, "the model sent upstream, after the provider's aliases"},
		{"profile", cel.StringType, "the profile of the caller's key"},
		{"key", cel.StringType, "the caller's key, by its name under keys"},
		{"provider", cel.StringType, "the candidate's provider"},
		{"channel", cel.StringType, "the candidate's channel"},
		{"service", cel.StringType, "the MCP server or A2A agent called, by its name under mcp_servers or agents; empty for an LLM request"},
		{"method", cel.StringType, "the JSON-RPC method of an MCP or A2A call (tools/call, message/send, ...); empty for an LLM request"},
	})
)

func newEnvironment(kind, what string, vars []variable) *environment {
	names := make([]string, len(vars))
	for i, v := range vars {
		names[i] = v.name
	}
	sort.Strings(names)
	return &environment{kind: kind, what: what, vars: vars, names: names}
}

// Variable is one variable an expression of some kind may read.
type Variable struct {
	Name, Type, Doc string
}

// Variables lists the variables of an expression kind (KindCost,
// KindRule) in declaration order, with their CEL types.
func Variables(kind string) []Variable {
	e, err := environmentFor(kind)
	if err != nil {
		return nil
	}
	out := make([]Variable, len(e.vars))
	for i, v := range e.vars {
		out[i] = Variable{Name: v.name, Type: v.typ.String(), Doc: v.doc}
	}
	return out
}

// Reference renders an expression kind's variables one per line, as
// "name (type): what it holds"; the comments of schema/policy.cue are held
// to it.
func Reference(kind string) []string {
	vars := Variables(kind)
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = v.Name + " (" + v.Type + "): " + v.Doc
	}
	return out
}

// environmentFor returns the environment of a plan.Expr kind.
func environmentFor(kind string) (*environment, error) {
	switch kind {
	case KindCost:
		return costEnv, nil
	case KindRule:
		return ruleEnv, nil
	}
	return nil, fmt.Errorf("unknown expression kind %q (known: %s, %s)", kind, KindCost, KindRule)
}

// get builds the CEL environment on first use.
func (e *environment) get() (*cel.Env, error) {
	e.once.Do(func() {
		opts := make([]cel.EnvOption, len(e.vars))
		for i, v := range e.vars {
			opts[i] = cel.Variable(v.name, v.typ)
		}
		e.env, e.err = cel.NewEnv(opts...)
		if e.err != nil {
			e.err = fmt.Errorf("%s environment: %w", e.kind, e.err)
		}
	})
	return e.env, e.err
}

// declared reports whether name is one of the environment's variables.
func (e *environment) declared(name string) bool {
	i := sort.SearchStrings(e.names, name)
	return i < len(e.names) && e.names[i] == name
}
