// Package admissiontest records what admission gates were asked and how
// their tickets were closed, for the tests of the gates and of the
// attempt loop that asks them.
package admissiontest

import (
	"fmt"

	"github.com/pistra/pistra/runtime/admission"
)

// Journal is what happened, in order: a test's gates append their
// admissions and refusals to Log, the tickets of Ticket their closing.
type Journal struct{ Log []string }

// Add appends one entry.
func (j *Journal) Add(entry string) { j.Log = append(j.Log, entry) }

// Ticket is a ticket named name that logs "release name" or
// "settle name status" when closed, and "closed twice name" before the
// entry of every close after the first.
func (j *Journal) Ticket(name string) admission.Ticket { return &ticket{j: j, name: name} }

type ticket struct {
	j      *Journal
	name   string
	closed bool
}

func (t *ticket) close(how string) {
	if t.closed {
		t.j.Add("closed twice " + t.name)
	}
	t.closed = true
	t.j.Add(how)
}

func (t *ticket) Release() { t.close("release " + t.name) }

func (t *ticket) Settle(o *admission.Outcome) { t.close(fmt.Sprintf("settle %s %d", t.name, o.Status)) }
