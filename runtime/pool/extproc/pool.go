package extproc

import (
	"context"
	"errors"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// DialPool connects a pool to its endpoint picker, as the pool's policy
// says (its CA, or plaintext), in the shape package pool dials pickers
// (pool.Dial): pistrad's, and the benchmarks' that measure it.
func DialPool(p *plan.Pool) (pool.Picker, error) {
	c, err := Dial(p.Picker, Options{CAFile: p.PickerCAFile, Plaintext: p.PickerPlaintext})
	if err != nil {
		return nil, err
	}
	return picker{c}, nil
}

// picker is the ext_proc client in the shape the pool package asks for.
type picker struct{ c *Client }

func (p picker) Pick(ctx context.Context, q pool.Query) (*pool.Answer, error) {
	a, err := p.c.Pick(ctx, Query(q))
	if im, ok := errors.AsType[*ImmediateError](err); ok {
		return nil, &pool.Immediate{Status: im.Status, Body: string(im.Body)}
	}
	if err != nil {
		return nil, err
	}
	return &pool.Answer{Endpoints: a.Endpoints, Model: a.Model(), Stream: a}, nil
}

func (p picker) Close() error { return p.c.Close() }
