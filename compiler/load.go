package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/pistra/pistra/schema"
)

// loaded is a policy directory after CUE has read it: the operator's own
// value (which knows where everything was written) and the same value
// unified with #Policy (which knows the defaults).
type loaded struct {
	dir    string // as the operator gave it
	absDir string
	files  []policyFile
	// presets are the presets' files when the policy imports them.
	presets []policyFile
	// inst is the operator's value alone; unified is inst & #Policy.
	inst, unified cue.Value
	schema        cue.Value
}

// policyFile is one .cue file of the directory; Name is relative to it.
type policyFile struct {
	Name string
	Src  []byte
}

// loadDir reads every .cue file in dir, builds them as one CUE instance and
// unifies it with #Policy. A policy whose only errors are bare words (see
// quoteBareWords) is loaded with the words quoted: it comes back with
// those errors, for the caller to report with whatever else it finds.
func loadDir(dir string) (*loaded, Errors) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, Errors{{Pos: Pos{File: dir}, Msg: err.Error()}}
	}
	l := &loaded{dir: dir, absDir: abs}
	if errs := l.readFiles(); len(errs) > 0 {
		return nil, errs
	}
	overlay := map[string]load.Source{}
	args := make([]string, len(l.files))
	for i, f := range l.files {
		overlay[filepath.Join(abs, f.Name)] = load.FromBytes(f.Src)
		args[i] = "./" + f.Name
	}
	overlayPresets(abs, overlay)
	bi := load.Instances(args, &load.Config{Dir: abs, ModuleRoot: abs, Overlay: overlay})[0]
	imports, errs := l.importsPresets(bi.Files)
	if len(errs) > 0 {
		return nil, errs
	}
	if imports {
		l.presets = presetFiles()
	}
	if bi.Err != nil {
		return nil, l.cueErrors(bi.Err)
	}
	if errs := l.build(bi); len(errs) > 0 {
		return nil, errs
	}
	var quoted Errors
	if err := l.inst.Validate(); err != nil {
		var ok bool
		if quoted, ok = l.quoteBareWords(bi.Files, err); !ok {
			return nil, l.cueErrors(err)
		}
		// The first build kept its errors (the words unresolved) in bi;
		// every one of them was a word now quoted.
		bi.Err, bi.ResolutionErr = nil, nil
		if errs := l.build(bi); len(errs) > 0 {
			return nil, errs
		}
		if err := l.inst.Validate(); err != nil {
			return nil, append(quoted, l.cueErrors(err)...)
		}
	}
	l.unified = l.schema.Unify(l.inst)
	return l, quoted
}

// build compiles the schema and the instance, in a context of their own
// (an instance is built once per context).
func (l *loaded) build(bi *build.Instance) Errors {
	ctx := cuecontext.New()
	l.schema = ctx.CompileBytes(schema.PolicyCUE, cue.Filename("schema/policy.cue")).LookupPath(cue.ParsePath("#Policy"))
	if err := l.schema.Err(); err != nil {
		return Errors{{Msg: fmt.Sprintf("the built-in schema does not compile: %v", err)}}
	}
	l.inst = ctx.BuildInstance(bi)
	return nil
}

// readFiles reads the directory's .cue files, sorted, and refuses a
// directory whose files declare different packages: a policy is one
// package whatever its name, and files without a package clause join it.
func (l *loaded) readFiles() Errors {
	entries, err := os.ReadDir(l.absDir)
	if err != nil {
		return Errors{{Pos: Pos{File: l.dir}, Msg: fmt.Sprintf("reading the policy directory: %v", err)}}
	}
	var errs Errors
	var firstPkg, firstFile string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".cue") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(l.absDir, e.Name()))
		if err != nil {
			errs = append(errs, Error{Pos: Pos{File: filepath.Join(l.dir, e.Name())}, Msg: err.Error()})
			continue
		}
		l.files = append(l.files, policyFile{Name: e.Name(), Src: src})
		f, err := parser.ParseFile(e.Name(), src, parser.PackageClauseOnly)
		if err != nil || f.PackageName() == "" {
			continue // syntax errors are reported by the full load
		}
		switch {
		case firstPkg == "":
			firstPkg, firstFile = f.PackageName(), e.Name()
		case f.PackageName() != firstPkg:
			errs = append(errs, Error{
				Pos: l.pos(packagePos(f)),
				Msg: fmt.Sprintf("package %q differs from package %q of %s: the files of a policy directory are one package",
					f.PackageName(), firstPkg, firstFile),
			})
		}
	}
	if len(l.files) == 0 && len(errs) == 0 {
		errs = append(errs, Error{Pos: Pos{File: l.dir}, Msg: "no .cue files in the policy directory"})
	}
	return errs
}

// packagePos is where a file's package clause names the package.
func packagePos(f *ast.File) token.Pos {
	for _, d := range f.Decls {
		if p, ok := d.(*ast.Package); ok {
			return p.Name.Pos()
		}
	}
	return f.Pos()
}

// sourceHash is a SHA-256 over every file's name and content, the imported
// presets' included, so a bundle names the policy it came from wherever the
// directory lives and whichever pistrac built it.
func (l *loaded) sourceHash() string {
	h := sha256.New()
	for _, f := range slices.Concat(l.files, l.presets) { // sorted: os.ReadDir sorts by name, presets by import path
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Src))
		h.Write(f.Src)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// pos converts a CUE position into one relative to the directory as given.
func (l *loaded) pos(p token.Pos) Pos {
	if !p.IsValid() {
		return Pos{}
	}
	pp := p.Position()
	return Pos{File: l.displayName(pp.Filename), Line: pp.Line, Col: pp.Column}
}

// displayName maps a file name CUE reports (absolute, or bare for the
// package-clause parse) onto the directory as the operator gave it.
func (l *loaded) displayName(name string) string {
	if !filepath.IsAbs(name) {
		return filepath.Join(l.dir, name)
	}
	if rel, ok := l.presetRel(name); ok {
		return rel
	}
	if rel, err := filepath.Rel(l.absDir, name); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.Join(l.dir, rel)
	}
	return name
}

// relName is a file's path relative to the policy directory: the default
// origin of a compat channel's claim.
func (l *loaded) relName(p token.Pos) string {
	name := p.Filename()
	if rel, ok := l.presetRel(name); ok {
		return rel
	}
	if rel, err := filepath.Rel(l.absDir, name); err == nil && filepath.IsAbs(name) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(name)
}

// inPolicy reports whether a CUE position is in one of the policy's files
// (and not in the built-in schema).
func (l *loaded) inPolicy(p token.Pos) bool {
	if !p.IsValid() {
		return false
	}
	name := p.Filename()
	return filepath.IsAbs(name) && strings.HasPrefix(name, l.absDir+string(filepath.Separator))
}

// cueErrors turns CUE's own errors (syntax, conflicts between the
// operator's files) into ours, one per problem, positions in policy files.
func (l *loaded) cueErrors(err error) Errors {
	var out Errors
	var lists []string // lists split over files and preset claims, reported once each
	errs := cueerrors.Errors(err)
	for _, e := range errs {
		if ch, at, preset := l.presetClaim(e); len(at) > 0 && !slices.Contains(lists, pathString(ch)+"."+claimFields[0]) {
			for _, f := range claimFields {
				lists = append(lists, pathString(ch)+"."+f)
			}
			out = append(out, presetClaimError(ch, at, preset))
		}
	}
	for _, e := range errs {
		if list, at := l.splitList(e); len(at) > 0 && !under(lists, cuePathString(e.Path())) && !slices.Contains(lists, pathString(list)) {
			lists = append(lists, pathString(list))
			out = append(out, splitListError(list, at))
		}
	}
	for _, e := range errs {
		path := cuePathString(e.Path())
		// Everything else wrong inside a split list (a length mismatch,
		// the other elements) is the same problem.
		if !under(lists, path) {
			out = append(out, l.cueError(e, path))
		}
	}
	return out
}

// under reports whether path is one of lists or inside one.
func under(lists []string, path string) bool {
	return slices.ContainsFunc(lists, func(list string) bool {
		return path == list || strings.HasPrefix(path, list+"[") || strings.HasPrefix(path, list+".")
	})
}

// splitList recognizes a conflict inside a list written in more than one
// file: CUE unifies two lists element by element instead of appending
// them, so keys in two files conflict at keys[0]. It returns the list's
// path and where each file writes it, or no positions.
func (l *loaded) splitList(e cueerrors.Error) (cue.Path, []Pos) {
	if !l.inst.Exists() {
		return cue.Path{}, nil // the files did not build: nothing is unified yet
	}
	sels := cueSelectors(e.Path())
	root := slices.IndexFunc(sels, func(s cue.Selector) bool { return s.Type() == cue.IndexLabel })
	if format, _ := e.Msg(); root < 0 && strings.Contains(format, "incompatible list lengths") {
		root = len(sels)
	}
	if root <= 0 {
		return cue.Path{}, nil
	}
	list := cue.MakePath(sels[:root]...)
	op, parts := l.inst.LookupPath(list).Expr()
	if op != cue.AndOp {
		return cue.Path{}, nil
	}
	var at []Pos
	for _, part := range parts {
		p := part.Pos()
		if part.IncompleteKind() == cue.ListKind && l.inPolicy(p) &&
			!slices.ContainsFunc(at, func(q Pos) bool { return q.File == l.pos(p).File }) {
			at = append(at, l.pos(p))
		}
	}
	if len(at) < 2 {
		return cue.Path{}, nil
	}
	slices.SortFunc(at, func(a, b Pos) int { return strings.Compare(a.File, b.File) })
	return list, at
}

// splitListError says why a list in two files conflicts and how to join
// them: hidden fields are the files' own, and list.Concat appends. The fix
// names the list by its whole path (profiles: finance: require_caps: ...),
// since that is where the joined list goes.
func splitListError(list cue.Path, at []Pos) Error {
	files, hidden := make([]string, len(at)), make([]string, len(at))
	for i, p := range at {
		files[i] = filepath.Base(p.File)
		hidden[i] = "_" + strings.Map(func(r rune) rune {
			if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, strings.TrimSuffix(files[i], ".cue"))
	}
	sels := list.Selectors()
	labels := make([]string, len(sels))
	for i, s := range sels {
		labels[i] = s.String()
	}
	return Error{Pos: at[0], Also: at[1:], Path: pathString(list), Msg: fmt.Sprintf(
		"the list is written in %s, and CUE does not merge lists across files: it unifies them element by element, so they conflict; "+
			"define %s in one file, or give each file its own hidden list (%s: [...]) and join them once: %s: list.Concat([%s]) with import \"list\"",
		strings.Join(files, " and "), labels[len(labels)-1], hidden[0], strings.Join(labels, ": "), strings.Join(hidden, ", "))}
}

// cueError renders one CUE error: its first position in a policy file
// leads, the others follow; the message is CUE's, on one line.
func (l *loaded) cueError(e cueerrors.Error, path string) Error {
	var ps []Pos
	for _, p := range append([]token.Pos{e.Position()}, e.InputPositions()...) {
		if l.inPolicy(p) {
			if q := l.pos(p); !containsPos(ps, q) {
				ps = append(ps, q)
			}
		}
	}
	format, args := e.Msg()
	out := Error{Path: path, Msg: strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " ") + bareWordHint(format, args)}
	if len(ps) > 0 {
		out.Pos, out.Also = ps[0], ps[1:]
	}
	return out
}

func containsPos(ps []Pos, p Pos) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// cuePathString renders CUE's error path the way we print paths, dropping
// the #Policy prefix the unification adds.
func cuePathString(elems []string) string {
	return pathString(cue.MakePath(cueSelectors(elems)...))
}

// cueSelectors parses CUE's error path into selectors, without #Policy.
func cueSelectors(elems []string) []cue.Selector {
	if len(elems) > 0 && elems[0] == "#Policy" {
		elems = elems[1:]
	}
	sels := make([]cue.Selector, 0, len(elems))
	for _, e := range elems {
		if i, err := strconv.Atoi(e); err == nil {
			sels = append(sels, cue.Index(i))
		} else if s, err := strconv.Unquote(e); err == nil {
			sels = append(sels, cue.Str(s))
		} else {
			sels = append(sels, cue.Str(e))
		}
	}
	return sels
}
