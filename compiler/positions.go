package compiler

import (
	"cuelang.org/go/cue"
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
	return s.l.at(cue.MakePath(sels...))
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
