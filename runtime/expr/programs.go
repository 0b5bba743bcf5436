package expr

import (
	"encoding/base64"
	"fmt"
	"math"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// Programs are the evaluable form of a bundle's expressions, indexed like
// Graph.CEL. They are built once per bundle, never parse or check, and are
// safe for concurrent use.
type Programs struct {
	progs []program
}

type program struct {
	kind string
	prg  cel.Program
}

// Load builds a program for every checked expression. A bundle whose
// expressions do not load is refused whole.
func Load(exprs []plan.Expr) (*Programs, error) {
	p := &Programs{progs: make([]program, len(exprs))}
	for i, e := range exprs {
		prg, err := load(e)
		if err != nil {
			return nil, fmt.Errorf("cel[%d] (%s): %w", i, e.Kind, err)
		}
		p.progs[i] = program{kind: e.Kind, prg: prg}
	}
	return p, nil
}

func load(e plan.Expr) (cel.Program, error) {
	envDef, err := environmentFor(e.Kind)
	if err != nil {
		return nil, err
	}
	env, err := envDef.get()
	if err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(e.Checked)
	if err != nil {
		return nil, fmt.Errorf("checked AST is not valid base64: %w", err)
	}
	var pb exprpb.CheckedExpr
	if err := proto.Unmarshal(raw, &pb); err != nil {
		return nil, fmt.Errorf("checked AST does not decode: %w", err)
	}
	if pb.GetExpr() == nil {
		return nil, fmt.Errorf("checked AST holds no expression")
	}
	checked, err := cel.CheckedExprToAstWithSource(&pb, common.NewTextSource(e.Source))
	if err != nil {
		return nil, fmt.Errorf("checked AST does not convert: %w", err)
	}
	if err := checkOutput(e.Kind, checked.OutputType()); err != nil {
		return nil, err
	}
	prg, err := env.Program(checked, cel.CostLimit(perCallCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("building program: %w", err)
	}
	return prg, nil
}

// checkOutput refuses an AST whose result type does not fit its kind, which
// is what a bundle from another pistrac or a hand edit would look like.
func checkOutput(kind string, out *cel.Type) error {
	if kind == KindCost && !isNumber(out) {
		return fmt.Errorf("cost expression produces %s, not a number", out)
	}
	if kind == KindRule && out.Kind() != types.BoolKind {
		return fmt.Errorf("rule condition produces %s, not a bool", out)
	}
	return nil
}

// program returns the i-th program, which must be of the given kind.
func (p *Programs) program(i int, kind string) (cel.Program, error) {
	if i < 0 || i >= len(p.progs) {
		return nil, fmt.Errorf("cel[%d]: out of range (%d expressions)", i, len(p.progs))
	}
	if p.progs[i].kind != kind {
		return nil, fmt.Errorf("cel[%d]: is a %s expression, not %s", i, p.progs[i].kind, kind)
	}
	return p.progs[i].prg, nil
}

// Cost evaluates cost expression i over what s served and used. Negative and NaN results count as
// zero; results beyond uint64 saturate.
func (p *Programs) Cost(i int, s Served, u meter.Usage) (uint64, error) {
	prg, err := p.program(i, KindCost)
	if err != nil {
		return 0, err
	}
	act := usagePool.Get().(*usageActivation)
	act.s, act.u = s, u
	out, _, err := prg.Eval(act)
	act.s, act.u = Served{}, meter.Usage{}
	usagePool.Put(act)
	if err != nil {
		return 0, fmt.Errorf("cel[%d]: %w", i, err)
	}
	c, err := toCost(out)
	if err != nil {
		return 0, fmt.Errorf("cel[%d]: %w", i, err)
	}
	return c, nil
}

// Rule evaluates rule condition i over a.
func (p *Programs) Rule(i int, a Attrs) (bool, error) {
	prg, err := p.program(i, KindRule)
	if err != nil {
		return false, err
	}
	act := attrsPool.Get().(*attrsActivation)
	act.a = a
	out, _, err := prg.Eval(act)
	act.a = Attrs{}
	attrsPool.Put(act)
	if err != nil {
		return false, fmt.Errorf("cel[%d]: %w", i, err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("cel[%d]: condition produced %s, not a bool", i, out.Type())
	}
	return bool(b), nil
}

func toCost(v ref.Val) (uint64, error) {
	switch n := v.(type) {
	case types.Uint:
		return uint64(n), nil
	case types.Int:
		return uint64(max(n, 0)), nil
	case types.Double:
		f := float64(n)
		switch {
		case math.IsNaN(f) || f <= 0:
			return 0, nil
		case f >= math.MaxUint64:
			return math.MaxUint64, nil
		}
		return uint64(f), nil
	}
	return 0, fmt.Errorf("cost expression produced %s, not a number", v.Type())
}
