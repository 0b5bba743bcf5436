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
	// key is where the policy writes the field under its record, as a
	// dotted path ("cost.type"); empty when the value is derived rather
	// than written (a candidate's model, say).
	key string
}

// record is one named thing (a provider, a profile, a candidate, ...) and
// its fields. Records compared with each other are built by the same
// function, so their fields line up by position.
type record struct {
	name   string
	fields []field
	// at is the policy path that declares the record (see Positions).
	at []any
}

// change is one difference between two graphs, and where the policy
// makes it: at is a policy path, looked up in the old policy when removed
// is set (the new one no longer says it) and in the new one otherwise.
type change struct {
	text    string
	at      []any
	removed bool
	// op, kind and item say what changed, for readers other than the
	// text (the graph page's marks): kind is "candidate", "skip" or "".
	op   Op
	kind string
	item string
}

// fieldChanges lists "name: old -> new" for every field that differs,
// each at its own key under at.
func fieldChanges(a, b []field, at []any) []change {
	var out []change
	for i := range a {
		var text string
		switch {
		case a[i].value == b[i].value:
			continue
		case a[i].secret:
			text = a[i].name + " changed"
		case a[i].list:
			text = a[i].name + ": " + listChange(a[i].value, b[i].value)
		default:
			text = fmt.Sprintf("%s: %s -> %s", a[i].name, shown(a[i].value), shown(b[i].value))
		}
		out = append(out, change{text: text, at: under(at, a[i].key), removed: b[i].value == "" && a[i].key != "", op: Modified})
	}
	return out
}

// under extends a policy path with a dotted key.
func under(at []any, key string) []any {
	if at == nil || key == "" {
		return at
	}
	out := slices.Clone(at)
	for k := range strings.SplitSeq(key, ".") {
		out = append(out, k)
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
func diffRecords(kind string, a, b []record) []change {
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
	var out []change
	item := strings.TrimSpace(kind)
	for _, n := range names {
		ra, rb := am[n], bm[n]
		switch {
		case ra == nil:
			out = append(out, change{text: "+ " + kind + n, at: rb.at, op: Added, kind: item, item: n})
		case rb == nil:
			out = append(out, change{text: "- " + kind + n, at: ra.at, removed: true, op: Removed, kind: item, item: n})
		default:
			for _, c := range fieldChanges(ra.fields, rb.fields, rb.at) {
				c.text = "~ " + kind + n + ": " + c.text
				c.kind, c.item = item, n
				out = append(out, c)
			}
		}
	}
	return out
}
