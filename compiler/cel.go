package compiler

import (
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
)

// compileCEL compiles every budget cost expression and access rule at
// build time, so a typo fails the build and the runtime only evaluates. It
// fills Graph.CEL (each distinct expression once), Graph.Budgets,
// Graph.Rules and the profiles' rules.
func (c *compiler) compileCEL() {
	c.exprs = map[string]int{}
	order := make([]int, len(c.src.Budgets))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return c.src.Budgets[order[a]].Name < c.src.Budgets[order[b]].Name })
	for _, i := range order {
		b := c.src.Budgets[i]
		out := plan.Budget{Name: b.Name, Limit: b.Limit, Window: b.Window, Per: b.Per, CostType: b.Cost.Type,
			CostExpr: -1, CostPerCall: b.CostPerCall, CostPerSession: b.CostPerSession}
		if b.Cost.Type == plan.CostCEL && b.Cost.CEL != nil {
			e, err := expr.CompileCost(*b.Cost.CEL)
			if err != nil {
				c.celError(path("budgets", i, "cost", "cel"), err)
			} else {
				out.CostExpr = c.addExpr(e)
			}
		}
		c.g.Budgets = append(c.g.Budgets, out)
	}
	c.g.Rules = c.compileRules(path("access_rules"), c.src.AccessRules)
	c.profileRules = map[string][]plan.Rule{}
	for _, name := range sortedKeys(c.src.Profiles) {
		c.profileRules[name] = c.compileRules(path("profiles", name, "access_rules"), c.src.Profiles[name].AccessRules)
	}
}

func (c *compiler) compileRules(at cue.Path, rules []srcRule) []plan.Rule {
	var out []plan.Rule
	for i, r := range rules {
		e, static, err := expr.CompileRule(r.When)
		if err != nil {
			c.celError(cue.MakePath(append(index(at, i).Selectors(), cue.Str("when"))...), err)
			continue
		}
		out = append(out, plan.Rule{Name: r.Name, Code: r.Code, Message: r.Message, Expr: c.addExpr(e), Static: static})
	}
	return out
}

// addExpr stores an expression once and returns its index in Graph.CEL.
func (c *compiler) addExpr(e plan.Expr) int {
	key := e.Kind + "\x00" + e.Source
	if i, ok := c.exprs[key]; ok {
		return i
	}
	c.g.CEL = append(c.g.CEL, e)
	c.exprs[key] = len(c.g.CEL) - 1
	return len(c.g.CEL) - 1
}

// celError reports a CEL problem at the character it concerns inside the
// CUE string, when that can be placed exactly; a mistyped variable gets
// the declared one it most likely meant.
func (c *compiler) celError(at cue.Path, err *expr.Error) {
	pos := c.l.at(at)
	if err.Offset >= 0 {
		pos = c.l.inString(at, err.Offset)
	}
	c.errs = append(c.errs, Error{Pos: pos, Path: pathString(at), Msg: err.Msg + didYouMean(err.Undeclared, err.Declared)})
}

// inString is the position of byte offset off inside the string written at
// p: exact for single-line strings and for indented multi-line ones, as
// long as no escape sequence precedes the offset; otherwise the string's
// own position.
func (l *loaded) inString(p cue.Path, off int) Pos {
	start := l.at(p)
	v := l.inst.LookupPath(p)
	f, ok := v.Source().(*ast.Field)
	if !ok {
		return start
	}
	lit, ok := f.Value.(*ast.BasicLit)
	s, err := v.String()
	if !ok || lit.Kind != token.STRING || err != nil || off > len(s) {
		return start
	}
	raw := lit.Value
	hashes := len(raw) - len(strings.TrimLeft(raw, "#"))
	body := raw[hashes:]
	if !strings.HasPrefix(body, `"""`) && !strings.HasPrefix(body, `'''`) {
		open := hashes + 1
		if len(raw) >= open+off && raw[open:open+off] == s[:off] {
			start.Col += open + off
		}
		return start
	}
	// A multi-line string: its content starts on the next line, and every
	// line carries the closing quote's indentation, which CUE strips.
	rawLines := strings.Split(raw, "\n")
	indent := rawLines[len(rawLines)-1]
	indent = indent[:len(indent)-len(strings.TrimLeft(indent, " \t"))]
	k := strings.Count(s[:off], "\n")
	lineStart := strings.LastIndex(s[:off], "\n") + 1
	col := off - lineStart
	if 1+k >= len(rawLines) {
		return start
	}
	line := rawLines[1+k]
	if len(line) < len(indent)+col || line[len(indent):len(indent)+col] != s[lineStart:off] {
		return start
	}
	return Pos{File: start.File, Line: start.Line + 1 + k, Col: len(indent) + col + 1}
}
