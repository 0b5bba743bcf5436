package expr

import (
	"sync"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"

	"github.com/pistra/pistra/runtime/meter"
)

// The activations resolve variables straight from the request's structs, and
// are pooled, so an evaluation builds no map and allocates no activation.
// They resolve exactly the names env.go declares.

type usageActivation struct {
	s Served
	u meter.Usage
}

var _ interpreter.Activation = (*usageActivation)(nil)

var usagePool = sync.Pool{New: func() any { return new(usageActivation) }}

func (a *usageActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "model":
		return types.String(a.s.Model), true
	case "backend":
		return types.String(a.s.Backend), true
	case "input_tokens":
		return types.Uint(a.u.InputTokens), true
	case "cached_input_tokens":
		return types.Uint(a.u.CachedInputTokens), true
	case "cache_creation_input_tokens":
		return types.Uint(a.u.CacheCreationInputTokens), true
	case "output_tokens":
		return types.Uint(a.u.OutputTokens), true
	case "total_tokens":
		return types.Uint(a.u.TotalTokens), true
	case "reasoning_tokens":
		return types.Uint(a.u.ReasoningTokens), true
	}
	return nil, false
}

func (a *usageActivation) Parent() interpreter.Activation { return nil }

type attrsActivation struct{ a Attrs }

var _ interpreter.Activation = (*attrsActivation)(nil)

var attrsPool = sync.Pool{New: func() any { return new(attrsActivation) }}

func (a *attrsActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "route":
		return types.String(a.a.Route), true
	case "model":
		return types.String(a.a.Model), true
	case "upstream_model":
		return types.String(a.a.UpstreamModel), true
	case "profile":
		return types.String(a.a.Profile), true
	case "key":
		return types.String(a.a.Key), true
	case "provider":
		return types.String(a.a.Provider), true
	case "channel":
		return types.String(a.a.Channel), true
	case "service":
		return types.String(a.a.Service), true
	case "method":
		return types.String(a.a.Method), true
	}
	return nil, false
}

func (a *attrsActivation) Parent() interpreter.Activation { return nil }
