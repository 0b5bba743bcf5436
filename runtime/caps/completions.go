package caps

import "github.com/pistra/pistra/runtime/plan"

// completionsMember confirms capabilities in one top-level member of a
// legacy Completions request (WIRE.md §5). Only multi_choice applies: n or
// best_of (several generated server-side, the best kept) is a number greater
// than 1.
func completionsMember(s *scanner, key []byte) plan.CapSet {
	switch string(key) {
	case "n", "best_of":
		return when(s.moreThanOne(), plan.CapMultiChoice)
	}
	s.skip()
	return 0
}
