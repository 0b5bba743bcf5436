package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/meter"
)

// TestReconcileWorkspaces: Anthropic's report groups by workspace, the
// default one as null. A key the policy names no workspace for is joined
// on its key alone, whichever workspace it is in; a key whose workspace
// the policy names is held to the one the provider reports, and a wrong
// one is named as the reason its rows fall apart.
func TestReconcileWorkspaces(t *testing.T) {
	const teamKey, team = "sk-team", "wrkspc_team"
	w := newWorld(t, day1.Add(9*time.Hour))
	w.anthropic, w.aBase = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, AdminKey: adminKey, Now: w.now,
		Workspaces: map[string]string{teamKey: team}})
	w.traffic() // on trafficKey, in the default workspace
	w.throughOn("anthropic", teamKey, "claude-haiku-4-5", "/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"from the team's workspace"}]}`, meter.ShapeMessages, false)
	w.at(day1.Add(49 * time.Hour))
	teamID := fakeprovider.KeyID(fakeprovider.DialectAnthropic, teamKey)

	if rep := w.reconcile(day1, day1, 0); rep.Status != StatusMatch {
		t.Fatalf("no workspace named: status %s, want match: %+v", rep.Status, rowsOf(rep)["anthropic"])
	}

	nameWorkspace := func(ws string) {
		byGroup := w.rows[day1]["anthropic"]
		for g, r := range byGroup {
			if g.KeyID == teamID {
				delete(byGroup, g)
				g.WorkspaceID, r.WorkspaceID = ws, ws
				byGroup[g] = r
			}
		}
	}
	nameWorkspace(team)
	rep := w.reconcile(day1, day1, 0)
	d := rowsOf(rep)["anthropic"]["2026-11-10"]
	if rep.Status != StatusMatch || rowWith(t, d, "claude-haiku-4-5").Verdict != Match {
		t.Fatalf("the team key's workspace named: %s %+v", rep.Status, d.Rows)
	}
	found := false
	for _, r := range d.Rows {
		found = found || (r.KeyID == teamID && r.WorkspaceID == team && r.Verdict == Match)
	}
	if !found {
		t.Errorf("no matching row of the team key in %s: %+v", team, d.Rows)
	}

	nameWorkspace("wrkspc_wrong")
	d = rowsOf(w.reconcile(day1, day1, 0))["anthropic"]["2026-11-10"]
	got := map[string]RowReport{}
	for _, r := range d.Rows {
		if r.KeyID == teamID {
			got[r.WorkspaceID] = r
		}
	}
	if r := got["wrkspc_wrong"]; r.Verdict != MissingProvider {
		t.Errorf("pistra's row in the wrong workspace: %+v", r)
	}
	if r := got[team]; r.Verdict != MissingPistra || !strings.Contains(strings.Join(r.Why, " "), `the policy's usage_api names "wrkspc_wrong"`) {
		t.Errorf("the provider's row in %s: %+v", team, r)
	}
}
