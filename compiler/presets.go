package compiler

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/token"

	"github.com/pistra/pistra/policies/presets"
)

// The loader makes the policy directory the root of a CUE module that exists
// only in its overlay, and places the embedded presets in that module's
// cue.mod/pkg, where CUE resolves an import without a registry. Nothing is
// written to the directory.
const presetDir = "cue.mod/pkg/"

// overlayPresets adds the module file and the presets to a load overlay
// for the policy directory abs. The module speaks the language version of
// the CUE pistrac is built with, as a directory with no module does.
func overlayPresets(abs string, overlay map[string]load.Source) {
	overlay[filepath.Join(abs, "cue.mod", "module.cue")] = load.FromString(
		fmt.Sprintf("module: \"pistra.local/policy@v0\"\nlanguage: version: %q\n", cue.LanguageVersion()))
	for _, f := range presetFiles() {
		overlay[filepath.Join(abs, filepath.FromSlash(presetDir+f.Name))] = load.FromBytes(f.Src)
	}
}

// presetFiles reads the presets' files, each named by the package's import
// path and its file name (pistra.dev/presets/gemini.cue).
func presetFiles() []policyFile {
	var out []policyFile
	for _, name := range presets.Names() {
		src, _ := fs.ReadFile(presets.FS, name+".cue") // embedded: cannot fail
		out = append(out, policyFile{Name: presets.Module + "/" + name + ".cue", Src: src})
	}
	return out
}

// importsPresets reports whether the policy's files import the presets,
// and refuses an import below their path: the presets are fields of one
// package, not packages of their own.
func (l *loaded) importsPresets(files []*ast.File) (bool, Errors) {
	imports := false
	var errs Errors
	for _, f := range files {
		for spec := range f.ImportSpecs() {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				continue // a syntax error, reported by the load
			}
			name, below := strings.CutPrefix(p, presets.Module+"/")
			switch {
			case p == presets.Module:
				imports = true
			case below:
				known := presets.Names()
				errs = append(errs, Error{Pos: l.pos(spec.Path.Pos()), Msg: fmt.Sprintf(
					"no package %q: the presets are fields of one package; import %q and write presets.%s (presets: %s)%s",
					p, presets.Module, name, listOf(known), didYouMean(name, known))})
			}
		}
	}
	return imports, errs
}

// presetOf names the preset a position is in, or "" for a position in the
// policy's own files.
func (l *loaded) presetOf(p token.Pos) string {
	rel, ok := l.presetRel(p.Filename())
	if !ok {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(rel, presets.Module+"/"), ".cue")
}

// presetRel is a file name in the overlay's preset directory as the import
// path and file name it stands for.
func (l *loaded) presetRel(name string) (string, bool) {
	rel, err := filepath.Rel(l.absDir, name)
	if err != nil || !filepath.IsAbs(name) {
		return "", false
	}
	return strings.CutPrefix(filepath.ToSlash(rel), presetDir)
}

// claimFields are a channel's claim: what an overlay replaces.
var claimFields = []string{"preserves", "verified_at", "verified_by"}

// presetClaim recognizes a conflict with a preset's claim: the operator
// wrote a claim field of a channel a preset declares, which CUE unifies
// with the preset's rather than replacing it. It returns the channel's
// path, the positions (the operator's first) and the preset, or no path.
func (l *loaded) presetClaim(e cueerrors.Error) (cue.Path, []Pos, string) {
	sels := cueSelectors(e.Path())
	if len(sels) < 5 || sels[0].String() != "providers" || sels[2].String() != "channels" ||
		sels[4].LabelType() != cue.StringLabel || !slices.Contains(claimFields, sels[4].Unquoted()) {
		return cue.Path{}, nil, ""
	}
	var preset string
	var own, theirs []Pos
	at := append([]token.Pos{e.Position()}, e.InputPositions()...)
	// A list's length conflict names only one side; the conjuncts of the
	// field name both.
	if op, parts := l.inst.LookupPath(cue.MakePath(sels[:5]...)).Expr(); op == cue.AndOp {
		for _, part := range parts {
			at = append(at, part.Pos())
		}
	}
	for _, p := range at {
		switch name := l.presetOf(p); {
		case name != "":
			preset, theirs = name, appendPos(theirs, l.pos(p))
		case l.inPolicy(p):
			own = appendPos(own, l.pos(p))
		}
	}
	if preset == "" || len(own) == 0 {
		return cue.Path{}, nil, ""
	}
	return cue.MakePath(sels[:4]...), append(own, theirs...), preset
}

func appendPos(ps []Pos, p Pos) []Pos {
	if containsPos(ps, p) {
		return ps
	}
	return append(ps, p)
}

// presetClaimError says how a preset's claim is overridden.
func presetClaimError(channel cue.Path, at []Pos, preset string) Error {
	sels := channel.Selectors()
	prov, ch := sels[1].String(), sels[3].String()
	return Error{Pos: at[0], Also: at[1:], Path: pathString(channel), Msg: fmt.Sprintf(
		"the claim on this channel is the preset's (presets.%s), and a claim written over it conflicts; "+
			"replace it in an overlay instead: overlays: \"<name>\": claims: %s: %s: {preserves: [...], verified_at: \"YYYY-MM-DD\", verified_by: \"<page or probe>\"}",
		preset, prov, ch)}
}
