package admission_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/admission/admissiontest"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// journal is what the gates of one test were asked and how their tickets
// were closed, in order.
type journal struct {
	admissiontest.Journal
	// req and cand are what every gate must be asked about.
	req  *admission.Request
	cand *plan.Candidate
}

// gate takes a ticket named name, or refuses with refusal, or (nothing)
// admits holding nothing.
type gate struct {
	j       *journal
	name    string
	refusal *admission.Refusal
	nothing bool
}

func (g gate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	g.j.Add("admit " + g.name)
	if r != g.j.req || c != g.j.cand {
		g.j.Add("asked of another request or candidate: " + g.name)
	}
	switch {
	case g.refusal != nil:
		return nil, g.refusal
	case g.nothing:
		return admission.NothingHeld, nil
	}
	return g.j.Ticket(g.name), nil
}

func newJournal() *journal {
	return &journal{req: &admission.Request{Profile: 1, Key: 2}, cand: &plan.Candidate{Provider: 0, Model: "m"}}
}

func (j *journal) admit(gs admission.Gates) (admission.Ticket, *admission.Refusal) {
	return gs.Admit(j.req, j.cand)
}

func (j *journal) want(t *testing.T, step string, want ...string) {
	t.Helper()
	if !slices.Equal(j.Log, want) {
		t.Errorf("%s:\n  %q\nwant\n  %q", step, j.Log, want)
	}
	j.Log = nil
}

// TestGatesAdmitInOrder: every gate is asked, in order, about the same
// request and candidate, and the one ticket returned closes every gate's
// ticket exactly once, in the same order, however it is closed.
func TestGatesAdmitInOrder(t *testing.T) {
	for _, settle := range []bool{true, false} {
		j := newJournal()
		gs := admission.Gates{gate{j: j, name: "suspension", nothing: true}, gate{j: j, name: "circuit"}, gate{j: j, name: "budget"},
			gate{j: j, name: "pool"}}
		held, no := j.admit(gs)
		if no != nil || held == nil {
			t.Fatalf("admitted by every gate: ticket %v, refusal %+v", held, no)
		}
		j.want(t, "admission", "admit suspension", "admit circuit", "admit budget", "admit pool")
		if settle {
			held.Settle(&admission.Outcome{Status: 200})
			j.want(t, "settled", "settle circuit 200", "settle budget 200", "settle pool 200")
		} else {
			held.Release()
			j.want(t, "released", "release circuit", "release budget", "release pool")
		}
	}
}

// TestRefusalGivesBackWhatEarlierGatesTook: the first refusal ends the
// chain (later gates are not asked), every ticket the gates before it
// took is released, once, and the refusal comes back as the gate gave it,
// Final or not: whether to pass the candidate over or answer with it is
// the attempt loop's to decide from Final.
func TestRefusalGivesBackWhatEarlierGatesTook(t *testing.T) {
	for _, final := range []bool{false, true} {
		t.Run(fmt.Sprintf("final=%v", final), func(t *testing.T) {
			j := newJournal()
			refusal := &admission.Refusal{Reason: "budget_exceeded", Final: final,
				Error: dialect.Errorf(http.StatusTooManyRequests, dialect.CodeBudgetExceeded, "no room")}
			gs := admission.Gates{gate{j: j, name: "circuit"}, gate{j: j, name: "none", nothing: true}, gate{j: j, name: "pool"},
				gate{j: j, name: "budget", refusal: refusal}, gate{j: j, name: "after"}}
			held, no := j.admit(gs)
			if held != nil {
				t.Errorf("a refused candidate got a ticket: %v", held)
			}
			if no != refusal || no.Final != final || no.Reason != "budget_exceeded" {
				t.Errorf("refusal %+v, want the gate's own %+v", no, refusal)
			}
			j.want(t, "refused", "admit circuit", "admit none", "admit pool", "admit budget", "release circuit", "release pool")
		})
	}
}

// TestFirstGateRefusingTakesNothing: a refusal by the first gate has
// nothing to give back.
func TestFirstGateRefusingTakesNothing(t *testing.T) {
	j := newJournal()
	refusal := &admission.Refusal{Reason: "provider_suspended", Final: true}
	held, no := j.admit(admission.Gates{gate{j: j, name: "suspension", refusal: refusal}, gate{j: j, name: "budget"}})
	if held != nil || no != refusal {
		t.Fatalf("ticket %v, refusal %+v", held, no)
	}
	j.want(t, "refused first", "admit suspension")
}

// TestNothingHeldAddsNothing: gates that take nothing leave the ticket of
// the one that did as it is, and a chain in which none took anything (or
// an empty one) holds NothingHeld itself, whose closing does nothing.
func TestNothingHeldAddsNothing(t *testing.T) {
	j := newJournal()
	none := gate{j: j, name: "none", nothing: true}
	held, _ := j.admit(admission.Gates{none, gate{j: j, name: "budget"}, none})
	held.Settle(&admission.Outcome{Status: 500})
	j.want(t, "one ticket", "admit none", "admit budget", "admit none", "settle budget 500")

	for _, gs := range []admission.Gates{{none, none}, {}, nil} {
		held, no := j.admit(gs)
		if held != admission.NothingHeld || no != nil {
			t.Errorf("%d gates holding nothing: ticket %v, refusal %+v", len(gs), held, no)
		}
		held.Release()
		held.Settle(&admission.Outcome{Status: 200})
	}
	j.want(t, "nothing held", "admit none", "admit none")
}

// TestAdmitAll admits every candidate holding nothing.
func TestAdmitAll(t *testing.T) {
	j := newJournal()
	held, no := admission.AdmitAll{}.Admit(j.req, j.cand)
	if held != admission.NothingHeld || no != nil {
		t.Fatalf("ticket %v, refusal %+v", held, no)
	}
}
