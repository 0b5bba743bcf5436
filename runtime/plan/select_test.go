package plan

import (
	"reflect"
	"testing"
)

func TestSelect(t *testing.T) {
	native := Candidate{Tier: TierNative, Preserves: AllCaps}
	compat := Candidate{Tier: TierProviderCompat, Preserves: Of(CapExtendedThinking)}
	xlate := Candidate{Tier: TierTranslation, Preserves: AllCaps &^ TranslationLosses[TranslateOpenAIAnthropic]}
	keepsCaching := Candidate{Tier: TierProviderCompat, Preserves: Of(CapPromptCaching, CapStrictTools)}
	strict := Of(CapStrictTools)
	three := Of(CapStrictTools, CapMultiChoice, CapAudioInput)
	cases := []struct {
		name     string
		cands    []Candidate
		used     CapSet
		onLoss   LossAction
		attempt  []int
		passed   []Loss
		lossy    bool
		rejected bool
	}{
		{"no caps used keeps plan order", []Candidate{compat, native}, 0, LossReject, []int{0, 1}, nil, false, false},
		{"lossy compat passed over for native", []Candidate{compat, native}, strict, LossReject,
			[]int{1}, []Loss{{0, strict}}, false, false},
		{"a compat channel keeping what is used is attempted in its place", []Candidate{keepsCaching, native}, Of(CapPromptCaching), LossReject,
			[]int{0, 1}, nil, false, false},
		{"lossless ones keep plan order, the lossy are passed in plan order", []Candidate{compat, native, compat, native}, strict, LossReject,
			[]int{1, 3}, []Loss{{0, strict}, {2, strict}}, false, false},
		{"a loss reports only the caps used that are missing", []Candidate{compat, native}, Of(CapStrictTools, CapExtendedThinking), LossReject,
			[]int{1}, []Loss{{0, strict}}, false, false},
		{"one lossless candidate is enough, whatever onLoss says", []Candidate{compat, native}, strict, LossAllow,
			[]int{1}, []Loss{{0, strict}}, false, false},
		{"all lossy rejected names every loss", []Candidate{compat, xlate}, Of(CapStrictTools, CapMultiChoice), LossReject,
			[]int{}, []Loss{{0, Of(CapStrictTools, CapMultiChoice)}, {1, Of(CapMultiChoice)}}, false, true},
		{"an unset action rejects: only allow forwards lossy", []Candidate{compat}, strict, "",
			[]int{}, []Loss{{0, strict}}, false, true},
		{"all lossy allowed, fewest losses first", []Candidate{compat, xlate}, Of(CapStrictTools, CapMultiChoice), LossAllow,
			[]int{1, 0}, nil, true, false},
		{"all lossy allowed, sorted by loss count across the list", []Candidate{compat, keepsCaching, xlate}, three, LossAllow,
			[]int{1, 2, 0}, nil, true, false},
		{"all lossy allowed, equal losses keep plan order", []Candidate{compat, compat, compat}, strict, LossAllow,
			[]int{0, 1, 2}, nil, true, false},
		{"empty plan", nil, strict, LossReject, []int{}, nil, false, false},
		{"empty plan is neither lossy nor rejected when allowed", nil, strict, LossAllow, []int{}, nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Select(c.cands, c.used, c.onLoss, make([]int, 0, 4))
			if !reflect.DeepEqual(got.Attempt, c.attempt) || !reflect.DeepEqual(got.Passed, c.passed) ||
				got.Lossy != c.lossy || got.Rejected != c.rejected {
				t.Fatalf("got %+v, want attempt %v passed %v lossy %v rejected %v", got, c.attempt, c.passed, c.lossy, c.rejected)
			}
		})
	}
}

// TestSelectUsesBuf: Attempt is built in buf's array, from its start,
// whatever buf held.
func TestSelectUsesBuf(t *testing.T) {
	buf := []int{7, 7, 7, 7}[:2]
	got := Select([]Candidate{{Preserves: AllCaps}, {Preserves: 0}, {Preserves: AllCaps}}, Of(CapMultiChoice), LossReject, buf)
	if !reflect.DeepEqual(got.Attempt, []int{0, 2}) || &got.Attempt[0] != &buf[0] {
		t.Fatalf("attempt %v, not built in buf", got.Attempt)
	}
}

func TestSelectDoesNotAllocateWhenLossless(t *testing.T) {
	cands := []Candidate{{Preserves: AllCaps}, {Preserves: AllCaps}}
	buf := make([]int, 0, 4)
	if n := testing.AllocsPerRun(100, func() { Select(cands, Of(CapStrictTools), LossReject, buf) }); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}
