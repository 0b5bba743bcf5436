package expr

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
)

// parseError turns CEL's first syntax error into one line with a byte offset.
func parseError(src string, iss *cel.Issues) *Error {
	first := earliest(iss.Errors())
	msg := oneLine(first.Message)
	msg = strings.TrimPrefix(msg, "Syntax error: ")
	// ANTLR lists every token it would have taken, which buries the point.
	if m := unexpectedToken.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unexpected %s", m[1])
		if m[1] == "'<EOF>'" {
			msg = "unexpected end of expression"
		}
	}
	return &Error{Msg: "syntax error: " + msg, Offset: byteOffset(src, first.Location)}
}

// unexpectedToken matches ANTLR's messages for a token the grammar cannot
// take at that point.
var unexpectedToken = regexp.MustCompile(`^(?:mismatched|extraneous) input ('.*') expecting `)

// noOverload matches the checker's message for an operator or function
// applied to argument types it has no overload for.
var noOverload = regexp.MustCompile(`^found no matching overload for '([^']+)' applied to '\((.*)\)'$`)

// checkError rewrites CEL's first type-check error in pistra's words where
// the cause is a common one, and otherwise passes CEL's message through.
func (e *environment) checkError(src string, parsed *cel.Ast, iss *cel.Issues) *Error {
	first := earliest(iss.Errors())
	offset := byteOffset(src, first.Location)
	msg := oneLine(first.Message)
	undeclared := strings.HasPrefix(msg, "undeclared reference to ")
	node, found := findExpr(parsed.NativeRep().Expr(), first.ExprID)
	switch {
	case undeclared && found && node.Kind() == ast.IdentKind:
		return e.undeclaredVariable(node.AsIdent(), offset)
	case undeclared && found && node.Kind() == ast.CallKind:
		return &Error{Msg: fmt.Sprintf("unknown function %q", node.AsCall().FunctionName()), Offset: offset}
	}
	if m := noOverload.FindStringSubmatch(msg); m != nil {
		return &Error{Msg: noOverloadMessage(m[1], m[2]), Offset: offset}
	}
	return &Error{Msg: msg, Offset: offset}
}

func (e *environment) undeclaredVariable(name string, offset int) *Error {
	if e.kind == KindCost && name == "route" {
		return &Error{Msg: routeInCost, Offset: offset}
	}
	return &Error{
		Msg:        fmt.Sprintf("undeclared variable %q (declared: %s)", name, strings.Join(e.names, ", ")),
		Offset:     offset,
		Undeclared: name,
		Declared:   e.names,
	}
}

// noOverloadMessage names the operator as written rather than CEL's internal
// name, and points out the usual culprit: the token counts are uint while an
// unsuffixed integer literal is int, and CEL does not mix them.
func noOverloadMessage(fn, args string) string {
	name := fn
	if sym, ok := operators.FindReverse(fn); ok && sym != "" {
		name = sym
	}
	msg := fmt.Sprintf("%q cannot be applied to (%s)", name, args)
	argTypes := strings.Split(args, ", ")
	if slices.Contains(argTypes, "uint") && slices.Contains(argTypes, "int") {
		msg += `; uint and int do not mix, so write unsigned literals with a u suffix (4u) or convert with uint()`
	}
	return msg
}

// earliest returns the error that comes first in the source, so the message
// shown is the one a reader meets first. errs is never empty here.
func earliest(errs []*cel.Error) *cel.Error {
	first := errs[0]
	for _, e := range errs[1:] {
		l, fl := e.Location, first.Location
		if l.Line() < fl.Line() || (l.Line() == fl.Line() && l.Column() < fl.Column()) {
			first = e
		}
	}
	return first
}

// findExpr returns the node with the given id.
func findExpr(root ast.Expr, id int64) (ast.Expr, bool) {
	var found ast.Expr
	ast.PreOrderVisit(root, ast.NewExprVisitor(func(e ast.Expr) {
		if found == nil && e.ID() == id {
			found = e
		}
	}))
	return found, found != nil
}

// byteOffset converts CEL's location (1-based line, 0-based column counted in
// code points) into a byte offset in src, -1 when the location is unknown.
func byteOffset(src string, loc common.Location) int {
	line, col := loc.Line(), loc.Column()
	if line < 1 || col < 0 {
		return -1
	}
	off := 0
	for l := 1; l < line; l++ {
		nl := strings.IndexByte(src[off:], '\n')
		if nl < 0 {
			return -1
		}
		off += nl + 1
	}
	for ; col > 0 && off < len(src); col-- {
		_, size := utf8.DecodeRuneInString(src[off:])
		off += size
	}
	return off
}

// firstNonSpace is where a message about the whole expression points.
func firstNonSpace(src string) int {
	if i := strings.IndexFunc(src, func(r rune) bool { return !unicode.IsSpace(r) }); i >= 0 {
		return i
	}
	return 0
}

// oneLine folds any line breaks in a CEL message into spaces.
func oneLine(msg string) string {
	return strings.Join(strings.Fields(msg), " ")
}
