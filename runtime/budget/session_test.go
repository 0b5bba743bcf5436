package budget

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// TestSessionHoldsItsCostAndSpendsAsItGoes: a session's ticket holds
// cost_per_session, takes each turn's usage as settled spend at once,
// refuses the rest of the session once a spend takes the limit past it,
// and on settling charges the session cost when it was established and
// keeps what was spent either way.
func TestSessionHoldsItsCostAndSpendsAsItGoes(t *testing.T) {
	for _, established := range []bool{true, false} {
		b := total(100, plan.WindowDay, plan.PerKey)
		b.CostPerSession = 5
		s := testSnapshot(t, b)
		g := New(NewMemory(), nil, newClock(noon).now)
		r := request(s, 0, 4000, 0)
		r.Route = plan.RouteRealtime
		tk, no := g.Admit(r, cheap)
		if no != nil {
			t.Fatal(no.Error)
		}
		if spent, h := held(t, g, "k0"); spent != 0 || h != 5 {
			t.Fatalf("held %d spent %d at the upgrade; want the session cost 5 held", h, spent)
		}
		turn := meter.Usage{InputTokens: 40, OutputTokens: 10, TotalTokens: 50, Reported: true}
		if no := admission.Spend(tk, &turn); no != nil {
			t.Fatalf("the first turn was refused: %v", no.Error)
		}
		if spent, h := held(t, g, "k0"); spent != 50 || h != 5 {
			t.Errorf("after a turn held %d spent %d; want 5 and 50", h, spent)
		}
		no = admission.Spend(tk, &turn) // 5 held + 100 spent: past 100
		if no == nil || no.Error.Code != "budget_exceeded" || !strings.Contains(no.Error.Message, `budget "b"`) || len(no.Error.Message) > 123 {
			t.Fatalf("the turn past the limit gave %+v; want budget_exceeded naming the budget in a close reason's length", no)
		}
		want := uint64(100)
		if established {
			tk.Settle(&admission.Outcome{Status: 101, Usage: meter.Usage{InputTokens: 80, OutputTokens: 20, TotalTokens: 100, Reported: true}})
			want += 5
		} else {
			tk.Release()
		}
		if spent, h := held(t, g, "k0"); spent != want || h != 0 {
			t.Errorf("established %v: settled held %d spent %d; want 0 and %d", established, h, spent, want)
		}
	}
}
