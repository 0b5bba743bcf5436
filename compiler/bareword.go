package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// A bare word where the schema wants a string (dialect: openai) is a
// reference in CUE: to nothing ("reference not found"), or to a field of
// that name around it (providers.openai, a structural cycle, or another
// provider's struct). Each is reported at the word with the fix; the
// first two stop CUE from building the rest, so the word is then read as
// the string it was surely meant as and the other checks run on.

// quoteBareWords finds the bare words behind the errors of a policy that
// does not validate and rewrites each into a string literal at the same
// position in files. It returns the errors to report for them, and false
// when some error has another cause or a word sits inside an expression:
// then the files are not to be built again.
func (l *loaded) quoteBareWords(files []*ast.File, err error) (Errors, bool) {
	var out Errors
	at := map[token.Position]bool{}
	for _, e := range cueerrors.Errors(err) {
		path := cuePathString(e.Path())
		format, args := e.Msg()
		switch {
		case format == "reference %q not found" && len(args) == 1 && bareName(fmt.Sprint(args[0])):
			at[e.Position().Position()] = true
			out = append(out, l.cueError(e, path))
		case strings.Contains(format, "structural cycle"):
			sels := cueSelectors(e.Path())
			v := l.inst.LookupPath(cue.MakePath(sels...))
			id, refers := bareRef(v)
			if id == nil || !schemaAt(l.schema, sels).IncompleteKind().IsAnyOf(cue.StringKind) {
				return nil, false
			}
			at[id.Pos().Position()] = true
			out = append(out, Error{Pos: l.pos(id.Pos()), Path: path, Msg: bareWordFix(id.Name, refers)})
		default:
			return nil, false
		}
	}
	quoted := 0
	for _, f := range files {
		// The parser lists the words it could not resolve, and CUE
		// reports those again when building unless they are gone.
		f.Unresolved = slices.DeleteFunc(f.Unresolved, func(id *ast.Ident) bool { return at[id.Pos().Position()] })
		ast.Walk(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if lit, ok := quote(n.Value, at); ok {
					n.Value, quoted = lit, quoted+1
				}
			case *ast.ListLit:
				for i, e := range n.Elts {
					if lit, ok := quote(e, at); ok {
						n.Elts[i], quoted = lit, quoted+1
					}
				}
			}
			return true
		}, nil)
	}
	// A word inside an expression (a & b, a + "x") is not a value to
	// read as a string.
	return out, quoted == len(at)
}

// quote is the string literal for a bare word at one of the positions.
func quote(e ast.Expr, at map[token.Position]bool) (*ast.BasicLit, bool) {
	id, ok := e.(*ast.Ident)
	if !ok || !at[id.Pos().Position()] {
		return nil, false
	}
	return &ast.BasicLit{ValuePos: id.NamePos, Kind: token.STRING, Value: strconv.Quote(id.Name)}, true
}

// bareName: definitions (#Provider) and hidden fields (_extra) are
// references on purpose, never a string left unquoted.
func bareName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_")
}

// bareRef is the bare word v is written as, and the path of the field
// it refers to; nil when v is not written as a bare word.
func bareRef(v cue.Value) (*ast.Ident, string) {
	var id *ast.Ident
	switch src := v.Source().(type) {
	case *ast.Field:
		id, _ = src.Value.(*ast.Ident)
	case *ast.Ident:
		id = src
	}
	if id == nil || !bareName(id.Name) {
		return nil, ""
	}
	refers := "a field"
	if _, p := v.ReferencePath(); len(p.Selectors()) > 0 {
		refers = pathString(p)
	}
	return id, refers
}

// bareWordFix is the message for a bare word that refers to a field.
func bareWordFix(name, refers string) string {
	return fmt.Sprintf("write %q in quotes (a bare word refers to %s)", name, refers)
}

// schemaAt is the schema for the value at sels, through pattern fields
// ([Name=string]: T) and list elements.
func schemaAt(sch cue.Value, sels []cue.Selector) cue.Value {
	for _, s := range sels {
		if s.Type() == cue.IndexLabel {
			sch = sch.LookupPath(cue.MakePath(cue.AnyIndex))
		} else if f, ok := schemaField(sch, s.Unquoted()); ok {
			sch = f
		} else {
			return cue.Value{}
		}
	}
	return sch
}
