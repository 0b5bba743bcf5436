package caps

import (
	"github.com/pistra/pistra/runtime/jsonscan"
	"github.com/pistra/pistra/runtime/plan"
)

// completionsMember confirms capabilities in one top-level member of a
// legacy Completions request (docs/wire.md#legacy-completions). Only multi_choice applies: n or
// best_of (several generated server-side, the best kept) is a number greater
// than 1.
func completionsMember(s *jsonscan.Scanner, key []byte) plan.CapSet {
	switch string(key) {
	case "n", "best_of":
		return when(moreThanOne(s), plan.CapMultiChoice)
	}
	s.Skip()
	return 0
}
