package compiler

import (
	"slices"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// Source is a loaded policy directory, for tools that point a reader at
// the line saying something (pistrac diff). It is the document as written,
// before checks.
type Source struct{ l *loaded }

// LoadSource loads dir's CUE the way Compile does, without compiling it.
func LoadSource(dir string) (*Source, error) {
	l, errs := loadDir(dir)
	if len(errs) > 0 {
		return nil, errs.sort()
	}
	return &Source{l: l}, nil
}

// Named selects the entry of a list (keys, budgets, access_rules) whose
// name field is the given name.
type Named string

// Pos is where the value at path is written: path holds field names
// (string), list indexes (int) and named list entries (Named). When the
// policy does not say the whole path, it is the position of the longest
// prefix it does say; the zero Pos when it says none of it.
func (s *Source) Pos(elems ...any) Pos {
	var sels []cue.Selector
	for _, e := range elems {
		switch e := e.(type) {
		case Named:
			i, ok := s.named(cue.MakePath(sels...), string(e))
			if !ok {
				return s.l.at(cue.MakePath(sels...))
			}
			sels = append(sels, cue.Index(i))
		case int:
			sels = append(sels, cue.Index(e))
		default:
			sels = append(sels, path(e).Selectors()...)
		}
	}
	return s.l.at(s.claimPath(cue.MakePath(sels...)))
}

// claimPath moves a path into a channel's claim (providers.P.channels.C
// .preserves, ... .origin) to where the claim that wins is written: the
// overlay's, when one wins.
func (s *Source) claimPath(p cue.Path) cue.Path {
	sels := p.Selectors()
	if len(sels) != 5 || sels[0].String() != "providers" || sels[2].String() != "channels" || sels[4].LabelType() != cue.StringLabel {
		return p
	}
	field := sels[4].Unquoted()
	if field != "origin" && !slices.Contains(claimFields, field) {
		return p
	}
	dateOf := func(at cue.Path) layer {
		d, _ := s.l.inst.LookupPath(at).String()
		return layer{claim: plan.Claim{VerifiedAt: d}, date: at}
	}
	base := dateOf(cue.MakePath(append(sels[:4:4], cue.Str("verified_at"))...))
	var names []string
	iter, _ := s.l.inst.LookupPath(path("overlays")).Fields()
	for iter.Next() {
		names = append(names, iter.Selector().Unquoted())
	}
	slices.Sort(names) // the compiler layers overlays in name order
	var overlays []layer
	for _, name := range names {
		at := cue.MakePath(cue.Str("overlays"), cue.Str(name), cue.Str("claims"), sels[1], sels[3], cue.Str("verified_at"))
		if s.l.inst.LookupPath(at).Exists() {
			overlays = append(overlays, dateOf(at))
		}
	}
	win := ordered(base, overlays)
	at := win[len(win)-1].date
	if at.String() == base.date.String() {
		return p
	}
	claim := at.Selectors()[:5]
	if field == "origin" {
		return cue.MakePath(claim[:2]...) // the overlay, which the origin names
	}
	return cue.MakePath(append(claim, cue.Str(field))...)
}

// named is the index of the entry of the list at p whose name is name.
func (s *Source) named(p cue.Path, name string) (int, bool) {
	iter, err := s.l.inst.LookupPath(p).List()
	if err != nil {
		return 0, false
	}
	for i := 0; iter.Next(); i++ {
		if n, err := iter.Value().LookupPath(cue.ParsePath("name")).String(); err == nil && n == name {
			return i, true
		}
	}
	return 0, false
}
