package explain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
)

// TestDeltasAreDiffs: Deltas reports the plans Diff prints, each change in
// Diff's words, with an op and item that agree with the words.
func TestDeltasAreDiffs(t *testing.T) {
	a, b := bundletest.DefaultPolicy(), editedGraph(t)
	var out strings.Builder
	if _, err := Diff(&out, a, b, nil, nil); err != nil {
		t.Fatal(err)
	}
	counts := map[Op]int{}
	for _, d := range Deltas(a, b) {
		counts[d.Op]++
		ref := d.Ref.Profile + " " + string(d.Ref.Route) + " " + d.Ref.Model
		switch d.Op {
		case Added, Removed:
			if !strings.Contains(out.String(), fmt.Sprintf("%c %s", d.Op, ref)) {
				t.Errorf("%c %s is not in Diff's output", d.Op, ref)
			}
			continue
		}
		if len(d.Changes) == 0 {
			t.Errorf("%s modified without a change", ref)
		}
		for _, c := range d.Changes {
			if !strings.Contains(out.String(), c.Text+"\n") || c.Text[0] != byte(c.Op) {
				t.Errorf("%s: change %q (op %c) is not Diff's", ref, c.Text, c.Op)
			}
			if c.Kind != "" && !strings.HasPrefix(c.Text[2:], c.Kind+" "+c.Item) {
				t.Errorf("%s: change %q names %s %q", ref, c.Text, c.Kind, c.Item)
			}
		}
	}
	// As TestDiffGolden counts them: 4 modified, 1 added, 2 removed.
	if counts[Modified] != 4 || counts[Added] != 1 || counts[Removed] != 2 {
		t.Errorf("deltas %v, want 4 modified, 1 added, 2 removed", counts)
	}
	if len(Deltas(a, cloneGraph(t, a))) != 0 {
		t.Error("a graph differs from its clone")
	}
}

// TestWalk: every table entry of every profile is in exactly one view of
// that profile, whose candidates and skips are its plan's.
func TestWalk(t *testing.T) {
	g := bundletest.DefaultPolicy()
	views := Walk(g, nil)
	seen := map[PlanRef]int{}
	for _, v := range views {
		p := &g.Plans[v.Plan]
		if len(v.Candidates) != len(g.CandidatesOf(p)) || len(v.Skips) != len(g.SkipsOf(p)) {
			t.Errorf("%s plan %d: %d candidates, %d skips", v.Profile, v.Plan, len(v.Candidates), len(v.Skips))
		}
		for _, r := range v.Refs {
			if r.Profile != v.Profile {
				t.Errorf("%v in a view of %s", r, v.Profile)
			}
			seen[r]++
		}
	}
	for _, prof := range g.Profiles {
		for _, e := range g.Tables[prof.Table].Entries {
			if n := seen[PlanRef{prof.Name, e.Route, e.Model}]; n != 1 {
				t.Errorf("%s %s %s in %d views", prof.Name, e.Route, e.Model, n)
			}
		}
	}
}
