// Package policytest runs a policy author's golden routing cases: files of
// CUE kept in POLICYDIR/tests/ (never unified with the policy itself), each
// case naming who asks (a profile or a key), on which route, for which
// model, using which capabilities, and what should happen: who serves it,
// in which failover order, or which refusal the client gets.
//
// Cases are answered by the gateway's own decision (route.Attempts: plan
// lookup, the access rules that read the key, the capability check and
// fidelity selection), on the graph compiled in process, so a case that
// passes here is what pistrad does before admission (suspensions, budgets
// and upstream health are not policy and are not decided here).
package policytest

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// Dir is where a policy directory keeps its cases.
const Dir = "tests"

// caseSchema is the shape of a case file. It is closed, so a misspelt
// field fails the load with its position rather than being ignored.
const caseSchema = `
#File: {
	cases?: [string]: #Case
}
#Case: {
	profile?: string
	key?:     string
	route:    string
	model:    string
	caps?: [...string]
	want: #Want
}
#Want: {
	serve?: #Serve
	order?: [...string]
	refuse?: string
}
#Serve: {
	provider:   string
	channel:    string
	model:      string
	translate?: string
	members?:   string
	picker?:    string
}
`

// Case is one decision a policy author pins.
type Case struct {
	Name    string
	Pos     string // file:line of the case
	Profile string
	Key     string
	Route   plan.Route
	Model   string
	Caps    []string
	Want    Want

	// profile and used are the case's question as checked at load: the
	// profile's index in the graph, and the capabilities it names.
	profile int
	used    plan.CapSet

	v     cue.Value // the case as CUE, for the positions of its fields
	file  *file
	field *ast.Field // the case's own want field, rewritten by Update
	// shared says where the want comes from when it is not written in the
	// case's own struct (a hidden field several cases embed, say), so
	// Update leaves it alone rather than change every case that uses it.
	shared string
}

// Want is what a case expects: the serving candidate, the attempt order,
// or a refusal's code. Serve and Order may be given together; Refuse
// stands alone.
type Want struct {
	Serve  *Serve   `json:"serve,omitempty"`
	Order  []string `json:"order,omitempty"`
	Refuse string   `json:"refuse,omitempty"`
}

// Serve names the candidate that takes the request.
type Serve struct {
	Provider  string `json:"provider"`
	Channel   string `json:"channel"`
	Model     string `json:"model"`
	Translate string `json:"translate,omitempty"`
	// Members and Picker say how a pooled candidate is dialled: the DNS
	// name whose addresses are its member set (its subset's, else its
	// pool's), and its pool's endpoint picker, "" for round robin.
	Members string `json:"members,omitempty"`
	Picker  string `json:"picker,omitempty"`
}

func (s Serve) String() string {
	out := s.Provider + "/" + s.Channel + " " + s.Model
	if s.Translate != "" {
		out += " (translated " + s.Translate + ")"
	}
	return out
}

// file is one case file as parsed, kept so Update can rewrite it.
type file struct {
	path  string
	ast   *ast.File
	dirty bool
}

// Load reads every .cue file in dir/tests, sorted by name, and checks each
// case against g, the graph it will be asked of. Every problem is listed,
// each with its file:line:col and, for a misspelt name, the likely one: a
// file that does not parse or fit the case shape, a case naming a key,
// profile, route or capability g does not have, giving both a key and a
// profile, or a profile whose access rules read the key (pistrad never
// decides without a key), a refusal code pistrad never answers, an order
// entry not in the `provider/channel model` form. No cases at all is an
// error too: a CI step pointed at the wrong directory must not pass.
func Load(dir string, g *plan.Graph) ([]*Case, error) {
	root := filepath.Join(dir, Dir)
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading the cases: %w", err)
	}
	ctx := cuecontext.New()
	def := ctx.CompileString(caseSchema, cue.Filename(schemaFile)).LookupPath(cue.ParsePath("#File"))
	if err := def.Err(); err != nil {
		return nil, fmt.Errorf("the built-in case schema does not compile: %w", err)
	}
	var cases []*Case
	var problems []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		cs, errs := loadFile(ctx, def, filepath.Join(root, e.Name()))
		cases, problems = append(cases, cs...), append(problems, errs...)
	}
	v := newVocab(g)
	for _, c := range cases {
		problems = append(problems, v.check(c)...)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s holds no cases (files of cases: {\"name\": {route, model, want: ...}})", root)
	}
	return cases, nil
}

// loadFile reads the cases of one file, and every problem with them that
// needs no graph.
func loadFile(ctx *cue.Context, def cue.Value, path string) ([]*Case, []string) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, []string{err.Error()}
	}
	f, err := parser.ParseFile(path, src, parser.ParseComments)
	if err != nil {
		return nil, cueError(err)
	}
	v := ctx.BuildFile(f)
	if err := v.Err(); err != nil {
		return nil, cueError(err)
	}
	if err := def.Unify(v).Validate(cue.Concrete(true)); err != nil {
		return nil, cueError(err)
	}
	cf := &file{path: path, ast: f}
	iter, err := v.LookupPath(cue.ParsePath("cases")).Fields()
	if err != nil {
		return nil, nil // a file without cases (shared comments, say)
	}
	var cases []*Case
	var problems []string
	for iter.Next() {
		cv := iter.Value()
		c := &Case{Name: iter.Selector().Unquoted(), Pos: fmt.Sprintf("%s:%d", path, cv.Pos().Line()), v: cv, file: cf}
		var raw struct {
			Profile, Key, Route, Model string
			Caps                       []string
			Want                       Want
		}
		if err := cv.Decode(&raw); err != nil {
			problems = append(problems, fmt.Sprintf("%s: case %q: %v", c.Pos, c.Name, err))
			continue
		}
		c.Profile, c.Key, c.Route, c.Model, c.Caps, c.Want = raw.Profile, raw.Key, plan.Route(raw.Route), raw.Model, raw.Caps, raw.Want
		own := caseField(f, c.Name)
		wv := cv.LookupPath(cue.ParsePath("want"))
		if fld, ok := wv.Source().(*ast.Field); ok && own != nil && within(fld, own) {
			c.field = fld
		} else {
			c.shared = origin(f, wv.Pos())
		}
		if (c.Want.Refuse != "") == (c.Want.Serve != nil || c.Want.Order != nil) {
			problems = append(problems, fmt.Sprintf("%s: case %q: want needs serve and/or order, or refuse alone", c.Pos, c.Name))
			continue
		}
		cases = append(cases, c)
	}
	return cases, problems
}

// caseField is the field of f declaring the case name under cases, nil
// when f spells it some other way.
func caseField(f *ast.File, name string) *ast.Field {
	for _, d := range f.Decls {
		top, ok := d.(*ast.Field)
		if !ok || label(top) != "cases" {
			continue
		}
		st, ok := top.Value.(*ast.StructLit)
		if !ok {
			continue
		}
		for _, e := range st.Elts {
			if c, ok := e.(*ast.Field); ok && label(c) == name {
				return c
			}
		}
	}
	return nil
}

func label(f *ast.Field) string {
	name, _, _ := ast.LabelName(f.Label)
	return name
}

// within reports whether node lies inside outer's text.
func within(node, outer ast.Node) bool {
	p, o := node.Pos(), outer.Pos()
	return p.Filename() == o.Filename() && p.Offset() >= o.Offset() && node.End().Offset() <= outer.End().Offset()
}

// origin names where a want not written in its case comes from: the
// top-level field holding it, and its file:line.
func origin(f *ast.File, at token.Pos) string {
	if !at.IsValid() {
		return "more than one place" // unified from several conjuncts
	}
	where := fmt.Sprintf("%s:%d", filepath.Base(at.Filename()), at.Line())
	for _, d := range f.Decls {
		if top, ok := d.(*ast.Field); ok && top.Pos().Offset() <= at.Offset() && at.Offset() < top.End().Offset() {
			return label(top) + " (" + where + ")"
		}
	}
	return where
}

// schemaFile names the case schema in CUE's positions.
const schemaFile = "pistrac test case schema"

// cueError is one line per problem, the position in the case file first,
// the way the compiler prints its own errors; a field the shape does not
// have is given the one it likely meant.
func cueError(err error) []string {
	var lines []string
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		line := strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ")
		if path := e.Path(); len(path) > 0 {
			if path[0] == "#File" {
				path = path[1:]
			}
			if line == "field not allowed" {
				line += compiler.DidYouMean(path[len(path)-1], shapeFields(path))
			}
			line = strings.Join(path, ".") + ": " + line
		}
		for _, p := range append([]token.Pos{e.Position()}, e.InputPositions()...) {
			if p.IsValid() && p.Filename() != schemaFile {
				line = fmt.Sprintf("%s:%d:%d: %s", p.Filename(), p.Line(), p.Column(), line)
				break
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// shapeFields is what caseSchema allows beside the last field of path:
// cases.NAME.x is a case's field, cases.NAME.want.x a want's, and
// cases.NAME.want.serve.x a serving candidate's.
func shapeFields(path []string) []string {
	switch {
	case len(path) == 3 && path[0] == "cases":
		return []string{"profile", "key", "route", "model", "caps", "want"}
	case len(path) == 4 && path[2] == "want":
		return []string{"serve", "order", "refuse"}
	case len(path) == 5 && path[3] == "serve":
		return []string{"provider", "channel", "model", "translate", "members", "picker"}
	case len(path) == 1:
		return []string{"cases"}
	}
	return nil
}

// Result is how a case came out.
type Result struct {
	Case *Case
	// Got is what the gateway decides, in the shape of a Want; Message is
	// the refusal's text when it refused.
	Got     Want
	Message string
	// Err is set when the gateway could not decide at all (the graph's
	// CEL does not load); what a case names is checked at Load.
	Err error
}

// Pass reports whether the case got what it wants: every kind of
// expectation it states.
func (r Result) Pass() bool {
	w, g := r.Case.Want, r.Got
	switch {
	case r.Err != nil:
		return false
	case w.Refuse != "":
		return g.Refuse == w.Refuse
	case g.Refuse != "":
		return false
	case w.Serve != nil && (g.Serve == nil || *w.Serve != *g.Serve):
		return false
	case w.Order != nil && !slices.Equal(w.Order, g.Order):
		return false
	}
	return true
}

// Run answers every case on g.
func Run(g *plan.Graph, cases []*Case) []Result {
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = run(g, c)
	}
	return out
}

func run(g *plan.Graph, c *Case) Result {
	r := Result{Case: c}
	cands, err := route.Attempts(g, route.Query{Profile: c.profile, Route: c.Route, Model: c.Model}, c.Key, nil, c.used)
	var e *dialect.Error
	switch {
	case errors.As(err, &e):
		r.Got.Refuse, r.Message = string(e.Code), e.Message
		return r
	case err != nil:
		r.Err = err
		return r
	}
	for i := range cands {
		s := served(g, &cands[i])
		if i == 0 {
			r.Got.Serve = &s
		}
		r.Got.Order = append(r.Got.Order, s.String())
	}
	return r
}

func served(g *plan.Graph, c *plan.Candidate) Serve {
	prov := &g.Providers[c.Provider]
	s := Serve{Provider: prov.Name, Channel: prov.Channels[c.Channel].Name, Model: c.Model, Translate: string(c.Translate)}
	if m := route.Members(g, c); m != nil {
		s.Members, s.Picker = m.Members, m.Picker
	}
	return s
}

// GotText renders what a case got in the kinds of expectation it states, so
// want and got read side by side.
func (r Result) GotText() string {
	g := r.Got
	if g.Refuse == "" && r.Case.Want.Refuse == "" {
		if r.Case.Want.Serve == nil {
			g.Serve = nil
		}
		if r.Case.Want.Order == nil {
			g.Order = nil
		}
	}
	return Describe(g)
}

// Describe renders a Want for a failure report.
func Describe(w Want) string {
	var parts []string
	if w.Refuse != "" {
		return "refused " + w.Refuse
	}
	if s := w.Serve; s != nil {
		serve := "serve " + s.String()
		if s.Members != "" {
			serve += " on a member of " + s.Members + ", picked by " + cmp.Or(s.Picker, "round robin")
		}
		parts = append(parts, serve)
	}
	if w.Order != nil {
		parts = append(parts, "order ["+strings.Join(w.Order, ", ")+"]")
	}
	return strings.Join(parts, "; ")
}

// Update rewrites the want of every failing case that could be asked with
// what it got, keeping the kinds of expectation it states (serve, order),
// and writes the files it changed. It returns how many cases it rewrote,
// and a note for each failing case whose want is not written in the case
// itself: rewriting a shared want would change the cases that pass.
func Update(results []Result) (int, []string, error) {
	n := 0
	var files []*file
	var manual []string
	for _, r := range results {
		if r.Pass() || r.Err != nil {
			continue
		}
		if r.Case.field == nil {
			manual = append(manual, fmt.Sprintf("%s: %s: want comes from %s: edit by hand", r.Case.Pos, r.Case.Name, r.Case.shared))
			continue
		}
		r.Case.field.Value = wantNode(r.Case.Want, r.Got)
		if !r.Case.file.dirty {
			r.Case.file.dirty = true
			files = append(files, r.Case.file)
		}
		n++
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	for _, f := range files {
		b, err := format.Node(f.ast)
		if err != nil {
			return n, manual, fmt.Errorf("%s: formatting: %w", f.path, err)
		}
		if err := os.WriteFile(f.path, b, 0o644); err != nil {
			return n, manual, err
		}
	}
	return n, manual, nil
}

// wantNode is the CUE for got, stating what old stated (serve by default
// when old was a refusal), written the way a person would: one-field
// structs as `want: refuse: "code"`, a serving candidate on one line.
func wantNode(old, got Want) ast.Expr {
	var fields []ast.Decl
	if got.Refuse != "" {
		fields = append(fields, field("refuse", ast.NewString(got.Refuse)))
	} else {
		if old.Serve != nil || old.Order == nil {
			s := got.Serve
			sf := []any{field("provider", ast.NewString(s.Provider)), field("channel", ast.NewString(s.Channel)), field("model", ast.NewString(s.Model))}
			for _, f := range [][2]string{{"translate", s.Translate}, {"members", s.Members}, {"picker", s.Picker}} {
				if f[1] != "" {
					sf = append(sf, field(f[0], ast.NewString(f[1])))
				}
			}
			serve := ast.NewStruct(sf...)
			for _, e := range serve.Elts {
				ast.SetRelPos(e, token.Blank)
			}
			serve.Rbrace = token.Blank.Pos()
			fields = append(fields, field("serve", serve))
		}
		if old.Order != nil {
			elems := make([]ast.Expr, len(got.Order))
			for i, o := range got.Order {
				elems[i] = ast.NewString(o)
			}
			fields = append(fields, field("order", ast.NewList(elems...)))
		}
	}
	if len(fields) == 1 {
		ast.SetRelPos(fields[0], token.Blank) // the shorthand want: x: ...
		return &ast.StructLit{Elts: fields}
	}
	return &ast.StructLit{Lbrace: token.Blank.Pos(), Elts: fields, Rbrace: token.Newline.Pos()}
}

func field(name string, v ast.Expr) *ast.Field {
	return &ast.Field{Label: ast.NewIdent(name), Value: v}
}
