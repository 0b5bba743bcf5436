// Package compiler turns a directory of CUE policy into the decision graph
// (runtime/plan). Each stage is a file: load.go reads the CUE and unifies it
// with the schema, shape.go checks the document against it, check.go and
// check_policy.go run the semantic checks, resolve.go builds the catalog
// (aliases, primaries, channels), cel.go compiles the expressions, plan.go
// plans every (profile, route, name). Every stage collects all of its errors
// with positions before the next one is skipped.
package compiler

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/schema"
)

// Compile loads every .cue file in dir, unifies it with the schema's
// #Policy, checks it, resolves the catalog, compiles CEL, plans the decision
// graph and validates the result against the IR's JSON Schema. When the
// policy is refused the error is Errors, one line per problem. Warnings
// are dropped; CompileWithWarnings returns them.
func Compile(dir string) (*plan.Graph, error) {
	g, _, err := CompileWithWarnings(dir)
	return g, err
}

// CompileWithWarnings is Compile that also returns the warnings of a policy
// that compiles: settings that are accepted but can never take effect
// (sorted by position, each with Warning set). A refused policy returns
// its errors only, since what an error breaks often looks dead as well.
func CompileWithWarnings(dir string) (*plan.Graph, Errors, error) {
	return CompileWithWarningsAt(dir, now())
}

// CompileWithWarningsAt is CompileWithWarnings with claims dated against
// today instead of the clock (a claim verified too long ago, or in the
// future, is a warning), so a test's warnings do not change as days pass.
func CompileWithWarningsAt(dir string, today time.Time) (*plan.Graph, Errors, error) {
	g, c, err := compile(dir, today)
	if err != nil {
		return nil, nil, err
	}
	return g, c.warns.sort(), nil
}

func compile(dir string, today time.Time) (*plan.Graph, *compiler, error) {
	l, quoted := loadDir(dir)
	if l == nil {
		return nil, nil, append(quoted.sort(), Error{Msg: notChecked})
	}
	if errs := l.checkShape(); len(errs) > 0 {
		return nil, nil, withQuoted(quoted, errs)
	}
	src, err := l.decode()
	if err != nil {
		return nil, nil, err
	}
	c := &compiler{l: l, src: src, g: &plan.Graph{SourceHash: l.sourceHash()}, today: today.UTC()}
	// Checks, resolution and CEL read the same decoded document and do not
	// depend on each other's success, so all their errors are reported
	// together; planning needs all three to have succeeded.
	c.check()
	c.resolve()
	c.compileCEL()
	if len(c.errs) > 0 {
		return nil, nil, withQuoted(quoted, c.errs)
	}
	if err := c.plan(); err != nil {
		return nil, nil, err
	}
	if len(c.errs) > 0 || len(quoted) > 0 {
		return nil, nil, withQuoted(quoted, c.errs)
	}
	c.warnDead()
	// Sealed last, over the finished graph: bundle.json and gen/ carry
	// the digest pistrad checks a bundle against.
	if err := bundle.Seal(c.g); err != nil {
		return nil, nil, err
	}
	doc, err := json.Marshal(c.g)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the decision graph: %w", err)
	}
	if err := schema.ValidateIR(doc); err != nil {
		return nil, nil, fmt.Errorf("the compiled decision graph does not match the IR schema (a compiler bug): %w", err)
	}
	return c.g, c, nil
}

// notChecked ends the errors of a policy CUE could not load: nothing else
// was checked, so a clean run after fixing them is not yet a clean policy.
const notChecked = "(nothing else was checked: the schema and policy checks run once CUE can load the policy)"

// withQuoted reports the bare words a policy was loaded with (see
// quoteBareWords) together with the errors found after; an error at a
// quoted word's position is about the word, already reported.
func withQuoted(quoted, errs Errors) Errors {
	out := append(Errors(nil), quoted...)
	for _, e := range errs {
		if !slices.ContainsFunc(quoted, func(q Error) bool { return q.Pos == e.Pos }) {
			out = append(out, e)
		}
	}
	return out.sort()
}

// compiler carries one compilation: the loaded document, the graph being
// built, the catalog's lookup tables and the errors found so far.
type compiler struct {
	l    *loaded
	src  *source
	g    *plan.Graph
	errs Errors
	// warns is dead policy, reported only when errs stays empty.
	warns Errors
	cat   catalog
	// today is the day claims are dated against.
	today time.Time
	// overlays holds the overlays' claims by provider and channel.
	overlays map[[2]string][]layer
	// exprs indexes Graph.CEL by kind and source; profileRules holds each
	// profile's compiled rules until its plan.Profile is built.
	exprs        map[string]int
	profileRules map[string][]plan.Rule
}

// errorf records a problem with the value at p, positioned at the value.
func (c *compiler) errorf(p cue.Path, format string, args ...any) {
	c.errs = append(c.errs, Error{Pos: c.l.at(p), Path: pathString(p), Msg: fmt.Sprintf(format, args...)})
}

// warnf records a warning about the value at p, positioned at the value.
func (c *compiler) warnf(p cue.Path, format string, args ...any) {
	c.warns = append(c.warns, Error{Pos: c.l.at(p), Path: pathString(p), Msg: fmt.Sprintf(format, args...), Warning: true})
}

// labelWarnf records a warning about the field at p, positioned at its name.
func (c *compiler) labelWarnf(p cue.Path, format string, args ...any) {
	c.warns = append(c.warns, Error{Pos: c.l.label(p), Path: pathString(p), Msg: fmt.Sprintf(format, args...), Warning: true})
}

// labelErrorf records a problem with the field at p as a whole, positioned
// at its name.
func (c *compiler) labelErrorf(p cue.Path, format string, args ...any) {
	c.errs = append(c.errs, Error{Pos: c.l.label(p), Path: pathString(p), Msg: fmt.Sprintf(format, args...)})
}
