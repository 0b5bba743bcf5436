package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// closest is the accepted name a mistyped one most likely meant: the one
// fewest edits away (a swap of neighbours counts as one edit), if close
// enough to be a typo rather than a different word. A stem of the name
// ("retry" for "retries") counts as close; a name with other digits
// ("gpt-5", "4xx") is another thing, not a typo. Ties go to the name
// first in known's order, so the suggestion is stable.
func closest(got string, known []string) (string, bool) {
	best, bestD := "", -1
	if got == "" {
		return "", false
	}
	if k, ok := synonyms[strings.ToLower(got)]; ok && slices.Contains(known, k) {
		return k, true
	}
	for _, k := range known {
		if k == got || digits(k) != digits(got) {
			continue
		}
		d := editDistance(strings.ToLower(got), strings.ToLower(k))
		if !nearEnough(got, k, d) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best, bestD >= 0
}

// synonyms are the other words operators write for a vocabulary's word,
// too far from it in letters for closest to see ("daily" is two edits
// from "day" and shares only "da").
var synonyms = map[string]string{
	"minutely": "minute", "1m": "minute", "60s": "minute",
	"hourly": "hour", "1h": "hour", "60m": "hour",
	"daily": "day", "1d": "day", "24h": "day",
	"monthly": "month", "30d": "month", "1mo": "month",
}

// nearEnough: one edit, or one per four letters of longer words, or a
// shared stem: the shorter word whole ("day" of "dayly"), or but its last
// letter ("retr" of "retry" and "retries"), and not under half the longer.
func nearEnough(got, k string, d int) bool {
	n := min(len(got), len(k))
	if d <= max(1, len(got)/4) {
		return true
	}
	prefix := 0
	for prefix < n && got[prefix] == k[prefix] {
		prefix++
	}
	return prefix >= 3 && prefix >= n-1 && 2*n >= max(len(got), len(k))
}

// didYouMean renders the suggestion for a message, or "" when nothing is
// close: `; did you mean "openai"?`.
func didYouMean(got string, known []string) string {
	if k, ok := closest(got, known); ok {
		return fmt.Sprintf("; did you mean %q?", k)
	}
	return ""
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// digits is the digits of s in order: "gpt-4o-mini" is "4".
func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// bareWordHint follows CUE's "reference "reject" not found": a bare word
// is a reference to a field, and a string is written in quotes. A word of
// one of the policy's vocabularies is certainly meant as the string.
func bareWordHint(format string, args []any) string {
	if format != "reference %q not found" || len(args) != 1 {
		return ""
	}
	word, ok := args[0].(string)
	if !ok {
		return ""
	}
	if slices.Contains(vocabulary(), word) {
		return fmt.Sprintf(": write %q in quotes (a bare word refers to a field)", word)
	}
	return fmt.Sprintf("; if it is meant as a string, write %q in quotes", word)
}

// vocabulary is every word a policy field accepts from a fixed list.
func vocabulary() []string {
	return slices.Concat(dialects, tiers, schemes, plan.CapNames(), plan.Names(plan.Routes), plan.Names(plan.LossActions),
		plan.Names(plan.FailureClasses), plan.Names(plan.Windows), plan.Names(plan.BucketScopes), plan.Names(plan.CostTypes),
		plan.Names(plan.AuthSchemes))
}

// DidYouMean is didYouMean for the files read beside a policy (pistrac
// test's case files), so they suggest the way the compiler does.
func DidYouMean(got string, known []string) string { return didYouMean(got, known) }
