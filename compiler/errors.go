package compiler

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a place in a policy file. File is the path as the operator gave
// the directory (relative to the working directory when they gave a
// relative one), so an editor or CI annotation can jump straight to it.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem in a policy: where, which field, and what is wrong
// (with what would be accepted). Also lists other positions that contribute,
// such as the first declaration of a duplicated name. A Warning is policy
// that compiles but cannot do what it reads (dead policy); it is printed
// in the same one-line form, marked "warning:".
type Error struct {
	Pos     Pos
	Path    string
	Msg     string
	Also    []Pos
	Warning bool
}

func (e Error) Error() string {
	var b strings.Builder
	if e.Pos.File != "" {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	for _, p := range e.Also {
		b.WriteString("\n    ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Errors is every problem found, sorted by position.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders errors by file, line, column, then text, and drops exact
// duplicates (two stages noticing the same thing).
func (es Errors) sort() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Error() < b.Error()
	})
	out := es[:0]
	for _, e := range es {
		if len(out) > 0 && e.Error() == out[len(out)-1].Error() {
			continue
		}
		out = append(out, e)
	}
	return out
}

// listOf renders a list of accepted values for a message: "a, b, c".
func listOf(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := append([]string(nil), names...)
	sort.Strings(s)
	return strings.Join(s, ", ")
}
