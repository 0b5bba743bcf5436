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
}

// perCallCostLimit bounds the work one evaluation may do. The expressions are
// arithmetic over a handful of scalars, so any honest expression stays far
// below it; it exists to stop a pathological one (a comprehension over a big
// literal, a regex over a long string) from eating the request path.
const perCallCostLimit = 100_000

// maxStringLen is the size assumed for every string variable when estimating
// cost at build time. Model, provider and key names are short identifiers.
const maxStringLen = 1024

// variable is one declared name of an environment.
type variable struct {
	name string
	typ  *cel.Type
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
		{"model", cel.StringType},
		{"backend", cel.StringType},
		{"input_tokens", cel.UintType},
		{"cached_input_tokens", cel.UintType},
		{"cache_creation_input_tokens", cel.UintType},
		{"output_tokens", cel.UintType},
		{"total_tokens", cel.UintType},
		{"reasoning_tokens", cel.UintType},
	})
	ruleEnv = newEnvironment(KindRule, "access rule condition", []variable{
		{"route", cel.StringType},
		{"model", cel.StringType},
		{"upstream_model", cel.StringType},
		{"profile", cel.StringType},
		{"key", cel.StringType},
		{"provider", cel.StringType},
		{"channel", cel.StringType},
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
