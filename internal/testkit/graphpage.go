package testkit

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// GraphPage is what a `pistrac graph` page shows, read back from its
// markup, for tests that hold the page to the graph it was made from.
type GraphPage struct {
	// Summary is the line comparing the graph with a base, "" without one.
	Summary string
	// Removed lists the plans only the base had.
	Removed []string
	// Providers and FailoverEdges are the overview picture's nodes and
	// its edges ("from -> to").
	Providers     []string
	FailoverEdges []string
	Plans         []PagePlan
	// Budgets and Rules list, per profile, the budgets and access rules
	// that apply to it: Name, and At where the policy declares them.
	Budgets, Rules map[string][]PageItem
	// SVGs counts the inline pictures.
	SVGs int
}

// PagePlan is one plan section: its profile, the (route, name)s that
// reach it, its candidates as the table and the picture list them, and
// its skips.
type PagePlan struct {
	Profile, Mark string
	Refs          []PageItem // Name is "route model"
	Candidates    []PageItem // the table's rows
	Boxes         []PageItem // the picture's boxes
	Edges         []string   // the picture's edge kinds: next, failover
	Skips         []PageItem
	Gone, Changes []string
}

// PageItem is one row or box: its name, its diff mark ("" when
// unchanged) and, for table rows, where the policy causes it.
type PageItem struct{ Name, Mark, At string }

// node is an element of the parsed page.
type node struct {
	name     xml.Name
	attrs    map[string]string
	children []*node
	text     strings.Builder
	inPlan   bool // under a plan's section
}

func (n *node) class() []string { return strings.Fields(n.attrs["class"]) }

func (n *node) has(class string) bool { return slices.Contains(n.class(), class) }

// all returns the descendants of n (n included) that match.
func (n *node) all(match func(*node) bool) []*node {
	var out []*node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.all(match)...)
	}
	return out
}

func (n *node) allNamed(local, class string) []*node {
	return n.all(func(m *node) bool { return m.name.Local == local && (class == "" || m.has(class)) })
}

// texts is the whole text under n, spaces collapsed.
func (n *node) texts() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(m *node) {
		b.WriteString(m.text.String())
		for _, c := range m.children {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// mark is the diff mark among n's classes.
func (n *node) mark() string {
	for _, c := range n.class() {
		if c == "added" || c == "modified" || c == "removed" {
			return c
		}
	}
	return ""
}

// svgElements are the only elements the page's pictures may hold.
var svgElements = []string{"svg", "defs", "marker", "path", "g", "rect", "text", "line", "title"}

// ReadGraphPage parses a page strictly as XML (it is written to be well
// formed), checks every picture is SVG (its namespace, a size and a
// viewBox, SVG elements only) and returns what the page shows.
func ReadGraphPage(b []byte) (GraphPage, error) {
	root, err := parseXML(b)
	if err != nil {
		return GraphPage{}, err
	}
	var p GraphPage
	for _, s := range root.allNamed("svg", "") {
		if s.name.Space != "http://www.w3.org/2000/svg" || s.attrs["width"] == "" || s.attrs["height"] == "" || s.attrs["viewBox"] == "" {
			return GraphPage{}, fmt.Errorf("picture %d is not a sized SVG: %v %v", p.SVGs, s.name, s.attrs)
		}
		for _, e := range s.all(func(*node) bool { return true }) {
			if e.name.Space != s.name.Space || !slices.Contains(svgElements, e.name.Local) {
				return GraphPage{}, fmt.Errorf("picture %d holds %v", p.SVGs, e.name)
			}
		}
		p.SVGs++
	}
	for _, n := range root.all(func(n *node) bool { return n.attrs["id"] == "diff" }) {
		p.Summary = n.texts()
	}
	for _, n := range root.allNamed("li", "removed") {
		if !n.inPlan {
			p.Removed = append(p.Removed, n.texts())
		}
	}
	for _, n := range root.allNamed("g", "provider") {
		p.Providers = append(p.Providers, n.attrs["data-name"])
	}
	for _, n := range root.allNamed("svg", "") {
		if n.attrs["aria-label"] == "providers and their failover edges" {
			for _, e := range n.allNamed("g", "edge") {
				p.FailoverEdges = append(p.FailoverEdges, e.attrs["data-from"]+" -> "+e.attrs["data-to"])
			}
		}
	}
	p.Budgets, p.Rules = map[string][]PageItem{}, map[string][]PageItem{}
	for _, d := range root.allNamed("div", "profile") {
		name := d.attrs["data-profile"]
		p.Budgets[name], p.Rules[name] = settingRows(d, "budgets"), settingRows(d, "rules")
	}
	for _, s := range root.allNamed("section", "plan") {
		p.Plans = append(p.Plans, readPlan(s))
	}
	return p, nil
}

// settingRows reads a profile's table of budgets or rules.
func settingRows(d *node, class string) []PageItem {
	var out []PageItem
	for _, t := range d.allNamed("table", class) {
		for _, tr := range t.allNamed("tr", "") {
			out = append(out, PageItem{Name: tr.allNamed("th", "")[0].texts(), At: tr.allNamed("td", "at")[0].texts()})
		}
	}
	return out
}

func readPlan(s *node) PagePlan {
	pp := PagePlan{Profile: s.attrs["data-profile"], Mark: s.mark()}
	for _, ul := range s.allNamed("ul", "refs") {
		for _, li := range ul.allNamed("li", "") {
			pp.Refs = append(pp.Refs, PageItem{Name: li.texts(), Mark: li.mark()})
		}
	}
	rows := func(class string) []PageItem {
		var out []PageItem
		for _, tr := range s.allNamed("tr", class) {
			at := ""
			if tds := tr.allNamed("td", "at"); len(tds) > 0 {
				at = tds[0].texts()
			}
			out = append(out, PageItem{Name: tr.attrs["data-name"], Mark: tr.mark(), At: at})
		}
		return out
	}
	pp.Candidates, pp.Skips = rows("cand"), rows("skip")
	for _, g := range s.allNamed("g", "cand") {
		pp.Boxes = append(pp.Boxes, PageItem{Name: g.attrs["data-name"], Mark: g.mark()})
	}
	for _, g := range s.allNamed("g", "edge") {
		pp.Edges = append(pp.Edges, g.class()[1])
	}
	for _, ul := range s.allNamed("ul", "gone") {
		for _, li := range ul.allNamed("li", "") {
			pp.Gone = append(pp.Gone, li.texts())
		}
	}
	for _, ul := range s.allNamed("ul", "changes") {
		for _, li := range ul.allNamed("li", "") {
			pp.Changes = append(pp.Changes, li.texts())
		}
	}
	return pp
}

// parseXML reads b into a tree of elements, strictly.
func parseXML(b []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	root := &node{attrs: map[string]string{}}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && len(stack) == 1 {
				return root, nil
			}
			return nil, fmt.Errorf("the page is not well formed: %w", err)
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name, attrs: map[string]string{}, inPlan: top.inPlan || t.Name.Local == "section"}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.text.Write(t)
		}
	}
}
