package plan

// Selection is what fidelity selection decided for one request: the
// candidates to attempt, in order, and those passed over.
type Selection struct {
	// Attempt lists candidate indexes (into the plan's candidate list) in
	// the order they may be tried.
	Attempt []int
	// Passed lists candidates passed over for a lossless one, with what
	// each would have lost.
	Passed []Loss
	// Lossy is true when no candidate preserves every capability the
	// request uses and policy allowed forwarding anyway; Attempt[0] is then
	// the best (fewest losses, then plan order).
	Lossy bool
	// Rejected is true when every candidate would lose something and
	// policy is reject; Passed then names every candidate's losses.
	Rejected bool
}

// Loss is one candidate and the capabilities it would drop.
type Loss struct {
	Candidate int
	Missing   CapSet
}

// Select decides, for a request using caps, which candidates may serve it.
// It is plain bitmask arithmetic over the precomputed candidates; onLoss is
// the profile's resolved on_fidelity_loss; anything but LossAllow rejects.
// buf is reused for Attempt when it has room, so the hot path need not
// allocate.
func Select(cands []Candidate, used CapSet, onLoss LossAction, buf []int) Selection {
	sel := Selection{Attempt: buf[:0]}
	for i := range cands {
		if missing := used &^ cands[i].Preserves; missing != 0 {
			sel.Passed = append(sel.Passed, Loss{Candidate: i, Missing: missing})
			continue
		}
		sel.Attempt = append(sel.Attempt, i)
	}
	if len(sel.Attempt) > 0 || len(cands) == 0 {
		return sel
	}
	if onLoss != LossAllow {
		sel.Rejected = true
		return sel
	}
	// Every candidate is lossy: try them fewest-losses first, keeping plan
	// order among equals (insertion sort: lists are a handful long).
	sel.Lossy = true
	for _, l := range sel.Passed {
		sel.Attempt = append(sel.Attempt, l.Candidate)
		for j := len(sel.Attempt) - 1; j > 0; j-- {
			a, b := sel.Attempt[j-1], sel.Attempt[j]
			if (used &^ cands[b].Preserves).Len() >= (used &^ cands[a].Preserves).Len() {
				break
			}
			sel.Attempt[j-1], sel.Attempt[j] = b, a
		}
	}
	sel.Passed = nil
	return sel
}
