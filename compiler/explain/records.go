package explain

import (
	"fmt"
	"slices"
	"strings"
)

// field is one named setting rendered as text, so settings of any kind
// compare the same way.
type field struct {
	name, value string
	// secret fields are reported as changed without showing either value.
	secret bool
	// list fields hold comma-separated names and report which were added
	// and removed rather than both whole lists.
	list bool
}

// record is one named thing (a provider, a profile, a candidate, ...) and
// its fields. Records compared with each other are built by the same
// function, so their fields line up by position.
type record struct {
	name   string
	fields []field
}

// fieldChanges lists "name: old -> new" for every field that differs.
func fieldChanges(a, b []field) []string {
	var out []string
	for i := range a {
		switch {
		case a[i].value == b[i].value:
		case a[i].secret:
			out = append(out, a[i].name+" changed")
		case a[i].list:
			out = append(out, a[i].name+": "+listChange(a[i].value, b[i].value))
		default:
			out = append(out, fmt.Sprintf("%s: %s -> %s", a[i].name, shown(a[i].value), shown(b[i].value)))
		}
	}
	return out
}

// listChange describes how one comma-separated list became another:
// "+x -y", or the two orders when only the order changed.
func listChange(a, b string) string {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	var parts []string
	for _, x := range as {
		if x != "" && !slices.Contains(bs, x) {
			parts = append(parts, "-"+x)
		}
	}
	for _, x := range bs {
		if x != "" && !slices.Contains(as, x) {
			parts = append(parts, "+"+x)
		}
	}
	if len(parts) == 0 {
		return "order " + a + " -> " + b
	}
	return strings.Join(parts, " ")
}

func shown(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// diffRecords compares two lists of records by name, sorted by name: "+ x"
// for an added record, "- x" for a removed one, and "~ x: change" for each
// changed field of a record in both.
func diffRecords(kind string, a, b []record) []string {
	byName := func(rs []record) map[string]*record {
		m := make(map[string]*record, len(rs))
		for i := range rs {
			m[rs[i].name] = &rs[i]
		}
		return m
	}
	am, bm := byName(a), byName(b)
	var names []string
	for n := range am {
		names = append(names, n)
	}
	for n := range bm {
		if am[n] == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		ra, rb := am[n], bm[n]
		switch {
		case ra == nil:
			out = append(out, "+ "+kind+n)
		case rb == nil:
			out = append(out, "- "+kind+n)
		default:
			for _, c := range fieldChanges(ra.fields, rb.fields) {
				out = append(out, "~ "+kind+n+": "+c)
			}
		}
	}
	return out
}
