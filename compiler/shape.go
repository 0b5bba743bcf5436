package compiler

import (
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// checkShape compares the operator's document with #Policy field by field:
// unknown fields, wrong types, values out of bounds, missing required
// fields. It walks the schema itself rather than printing CUE's errors
// because CUE reports a wrong type inside a disjunction as one line per
// failed branch and stops reporting closedness in a struct that already
// has an error; here every problem is one line, in the same words.
func (l *loaded) checkShape() Errors {
	w := shapeWalker{l: l}
	w.walk(nil, l.schema, l.inst, l.unified)
	// Whatever the walk did not reach (a conflict inside a helper the
	// operator defined, say) still fails the build, in CUE's words.
	if err := l.unified.Validate(cue.Concrete(true), cue.All()); err != nil {
		for _, e := range cueerrors.Errors(err) {
			if path := cuePathString(e.Path()); !isSummary(e) && !w.covered(path) {
				w.errs = append(w.errs, l.cueError(e, path))
				w.reported = append(w.reported, path)
			}
		}
	}
	return w.errs
}

type shapeWalker struct {
	l        *loaded
	errs     Errors
	reported []string // paths already reported, to keep one line per problem
}

func (w *shapeWalker) fail(sels []cue.Selector, pos token.Pos, format string, args ...any) {
	path := pathString(cue.MakePath(sels...))
	w.errs = append(w.errs, Error{Pos: w.l.pos(pos), Path: path, Msg: fmt.Sprintf(format, args...)})
	w.reported = append(w.reported, path)
}

// covered reports whether a problem at path was already reported at, above
// or below it.
func (w *shapeWalker) covered(path string) bool {
	for _, p := range w.reported {
		if p == path || p == "" || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") ||
			strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}

// walk checks the operator's value v (and its unification u) at sels
// against the schema value sch.
func (w *shapeWalker) walk(sels []cue.Selector, sch, v, u cue.Value) {
	want, got := sch.IncompleteKind(), v.IncompleteKind()
	if got&want == 0 {
		// dialect: anthropic inside providers.openai is the struct
		// providers.anthropic: the word was meant as a string.
		if id, refers := bareRef(v); id != nil && want&cue.StringKind != 0 {
			w.fail(sels, id.Pos(), "%s", bareWordFix(id.Name, refers))
		} else {
			w.fail(sels, valuePos(v), "expected %s, got %s", kindName(want), describe(v))
		}
		return
	}
	switch {
	case want&cue.StructKind != 0 && got == cue.StructKind:
		w.walkStruct(sels, sch, v, u)
	case want&cue.ListKind != 0 && got == cue.ListKind:
		// A list with a default (a preset's routes) is its default.
		v, _ = v.Default()
		u, _ = u.Default()
		elem := sch.LookupPath(cue.MakePath(cue.AnyIndex))
		iter, _ := v.List()
		for i := 0; iter.Next(); i++ {
			w.walk(append(sels, cue.Index(i)), elem, iter.Value(), u.LookupPath(cue.MakePath(cue.Index(i))))
		}
	default:
		if err := u.Err(); err != nil {
			w.fail(sels, valuePos(v), "%s", constraintMessage(err))
		} else if d, _ := u.Default(); !d.IsConcrete() {
			w.fail(sels, valuePos(v), "expected a concrete %s, got %s", kindName(want), describe(v))
		}
	}
}

func (w *shapeWalker) walkStruct(sels []cue.Selector, sch, v, u cue.Value) {
	// meant are the fields a misspelt one was taken for: the misspelling
	// is the one error, not also the field it leaves missing.
	var meant []string
	iter, _ := v.Fields()
	for iter.Next() {
		name := iter.Selector().Unquoted()
		field := append(sels[:len(sels):len(sels)], cue.Str(name))
		fs, ok := schemaField(sch, name)
		if !ok {
			known := knownFields(sch)
			hint := didYouMean(name, known)
			// The field meant may be written as well, in another file
			// (provider: beside providers:): still the likely typo, and
			// then not the field it leaves missing.
			if k, ok := closest(name, known); ok && v.LookupPath(cue.MakePath(cue.Str(k))).Exists() {
				hint += fmt.Sprintf(" (%s is also written elsewhere; CUE merges the two once the name is fixed)", k)
			} else if ok {
				meant = append(meant, k)
			}
			w.fail(field, labelPos(iter.Value()), "unknown field %q (known: %s)%s", name, listOf(known), hint)
			continue
		}
		w.walk(field, fs, iter.Value(), u.LookupPath(cue.MakePath(cue.Str(name))))
	}
	// A required field the operator left out is incomplete in u.
	siter, _ := sch.Fields()
	for siter.Next() {
		name := siter.Selector().Unquoted()
		if v.LookupPath(cue.MakePath(cue.Str(name))).Exists() || slices.Contains(meant, name) {
			continue
		}
		if d, _ := u.LookupPath(cue.MakePath(cue.Str(name))).Default(); !d.IsConcrete() {
			w.fail(sels, labelPos(v), "missing required field %q (%s)", name, kindName(siter.Value().IncompleteKind()))
		}
	}
}

// schemaField finds the schema for a field named name: a regular or
// optional field, else the struct's pattern constraint ([Name=string]: T).
func schemaField(sch cue.Value, name string) (cue.Value, bool) {
	for _, sel := range []cue.Selector{cue.Str(name), cue.Str(name).Optional(), cue.AnyString} {
		if f := sch.LookupPath(cue.MakePath(sel)); f.Exists() {
			return f, true
		}
	}
	return cue.Value{}, false
}

// knownFields lists the fields a schema struct declares.
func knownFields(sch cue.Value) []string {
	var out []string
	iter, _ := sch.Fields(cue.Optional(true))
	for iter.Next() {
		out = append(out, iter.Selector().Unquoted())
	}
	return out
}

func kindName(k cue.Kind) string {
	switch k {
	case cue.StructKind:
		return "struct"
	case cue.ListKind:
		return "list"
	case cue.NumberKind:
		return "number"
	}
	return k.String()
}

// describe renders an operator's value for "got ...": its kind, and the
// value itself when it is a short scalar.
func describe(v cue.Value) string {
	k := v.IncompleteKind()
	if !v.IsConcrete() || k == cue.StructKind || k == cue.ListKind {
		return kindName(k)
	}
	return fmt.Sprintf("%s %v", kindName(k), v)
}

// constraintMessage words a bound or constraint violation. Inside a
// disjunction (a field with a default) CUE reports each branch; the branch
// that says "out of bound" is the one that matters.
func constraintMessage(err error) string {
	var first string
	for _, e := range cueerrors.Errors(err) {
		if isSummary(e) {
			continue
		}
		format, args := e.Msg()
		if format == "invalid value %v (out of bound %s)" && len(args) == 2 {
			return fmt.Sprintf("must be %v, got %v", args[1], args[0])
		}
		if first == "" {
			first = fmt.Sprintf(format, args...)
		}
	}
	return strings.Join(strings.Fields(first), " ")
}

// isSummary reports CUE's "N errors in empty disjunction" line, which
// precedes one error per failed branch and says nothing of its own.
func isSummary(e cueerrors.Error) bool {
	format, _ := e.Msg()
	return strings.Contains(format, "errors in empty disjunction")
}

// valuePos is where a value is written: the expression itself for a
// scalar field or list element, the field's label for a struct or list.
func valuePos(v cue.Value) token.Pos {
	switch src := v.Source().(type) {
	case *ast.Field:
		switch src.Value.(type) {
		case *ast.StructLit, *ast.ListLit:
			return src.Pos()
		}
		return src.Value.Pos()
	case nil:
		return v.Pos()
	default:
		return src.Pos()
	}
}

// labelPos is where a field is named, falling back to its value.
func labelPos(v cue.Value) token.Pos {
	if f, ok := v.Source().(*ast.Field); ok {
		return f.Pos()
	}
	return v.Pos()
}

// pathString renders a path the way messages print it:
// profiles.eval.require_caps[0], providers."fake-openai".models.
func pathString(p cue.Path) string { return p.String() }
