package expr

import (
	"encoding/base64"
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"google.golang.org/protobuf/proto"

	"github.com/pistra/pistra/runtime/plan"
)

// Error is a compile error. Offset is the 0-based byte offset inside the source
// where the problem is, -1 when unknown, so the compiler can place it inside
// the CUE string that holds the expression. An undeclared variable also
// carries its name and the declared ones, for the compiler's suggestion.
type Error struct {
	Msg        string
	Offset     int
	Undeclared string
	Declared   []string
}

func (e *Error) Error() string { return e.Msg }

// routeInCost explains why cost expressions have no route.
const routeInCost = `"route" is not available in a cost expression: cost is per token and ` +
	`models carry the prices, so weight by model; route-dependent policy belongs in an access rule`

// CompileCost parses and type-checks a budget cost expression. It must
// produce a number (uint, int or double); the runtime turns the result into
// a uint64 cost.
func CompileCost(src string) (plan.Expr, *Error) {
	checked, err := costEnv.compile(src)
	if err != nil {
		return plan.Expr{}, err
	}
	if out := checked.OutputType(); !isNumber(out) {
		return plan.Expr{}, &Error{
			Msg:    fmt.Sprintf("cost expression must produce a number, got %s", out),
			Offset: firstNonSpace(src),
		}
	}
	return serialize(KindCost, src, checked)
}

// CompileRule parses and type-checks an access-rule condition, which must
// produce a bool. static reports whether the condition reads only facts known
// at build time (everything except key), so the compiler can fold it into the
// plans instead of leaving it to the request path.
func CompileRule(src string) (e plan.Expr, static bool, err *Error) {
	checked, err := ruleEnv.compile(src)
	if err != nil {
		return plan.Expr{}, false, err
	}
	if out := checked.OutputType(); out.Kind() != types.BoolKind {
		return plan.Expr{}, false, &Error{
			Msg:    fmt.Sprintf("access rule condition must produce a bool, got %s", out),
			Offset: firstNonSpace(src),
		}
	}
	e, err = serialize(KindRule, src, checked)
	return e, !readsVariable(checked, "key"), err
}

// compile parses, checks and cost-bounds src in this environment.
func (e *environment) compile(src string) (*cel.Ast, *Error) {
	env, err := e.get()
	if err != nil {
		return nil, &Error{Msg: err.Error(), Offset: -1}
	}
	parsed, iss := env.Parse(src)
	if iss.Err() != nil {
		return nil, parseError(src, iss)
	}
	checked, iss := env.Check(parsed)
	if iss.Err() != nil {
		return nil, e.checkError(src, parsed, iss)
	}
	est, estErr := env.EstimateCost(checked, sizeHints{e})
	if estErr != nil {
		return nil, &Error{Msg: fmt.Sprintf("estimating the cost of the %s: %v", e.what, estErr), Offset: -1}
	}
	if est.Max > perCallCostLimit {
		return nil, &Error{
			Msg: fmt.Sprintf("%s is too expensive to evaluate per request (estimated cost up to %d, limit %d)",
				e.what, est.Max, perCallCostLimit),
			Offset: firstNonSpace(src),
		}
	}
	return checked, nil
}

// serialize encodes a checked AST the way plan.Expr carries it. Deterministic
// marshaling sorts the AST's maps, so the same source always gives the same
// bytes and a rebuilt bundle does not show up as a diff.
func serialize(kind, src string, checked *cel.Ast) (plan.Expr, *Error) {
	pb, err := cel.AstToCheckedExpr(checked)
	if err != nil {
		return plan.Expr{}, &Error{Msg: fmt.Sprintf("serializing the checked %s expression: %v", kind, err), Offset: -1}
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(pb)
	if err != nil {
		return plan.Expr{}, &Error{Msg: fmt.Sprintf("serializing the checked %s expression: %v", kind, err), Offset: -1}
	}
	return plan.Expr{Kind: kind, Source: src, Checked: base64.StdEncoding.EncodeToString(raw)}, nil
}

func isNumber(t *cel.Type) bool {
	switch t.Kind() {
	case types.UintKind, types.IntKind, types.DoubleKind:
		return true
	}
	return false
}

// readsVariable reports whether the checked AST references the named
// variable. A comprehension variable of the same name also counts, which errs
// on the side of evaluating at request time.
func readsVariable(checked *cel.Ast, name string) bool {
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if ref.Name == name && len(ref.OverloadIDs) == 0 {
			return true
		}
	}
	return false
}

// sizeHints bounds the string variables for build-time cost estimation;
// without a bound every string operation would estimate as unbounded.
type sizeHints struct{ env *environment }

var _ cost.Estimator = sizeHints{}

func (h sizeHints) EstimateSize(node cost.AstNode) *cost.SizeEstimate {
	path := node.Path()
	if len(path) != 1 || !h.env.declared(path[0]) || node.Type().Kind() != types.StringKind {
		return nil
	}
	return &cost.SizeEstimate{Min: 0, Max: maxStringLen}
}

func (sizeHints) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}
