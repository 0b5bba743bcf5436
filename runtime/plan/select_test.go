package plan

import (
	"reflect"
	"slices"
	"testing"
)

func TestSelect(t *testing.T) {
	native := Candidate{Tier: TierNative, Preserves: AllCaps}
	compat := Candidate{Tier: TierProviderCompat, Preserves: Of(CapExtendedThinking)}
	xlate := Candidate{Tier: TierTranslation, Preserves: AllCaps &^ TranslationLosses[TranslateOpenAIAnthropic]}
	strict := Of(CapStrictTools)
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
		{"all lossy rejected names every loss", []Candidate{compat, xlate}, Of(CapStrictTools, CapMultiChoice), LossReject,
			[]int{}, []Loss{{0, Of(CapStrictTools, CapMultiChoice)}, {1, Of(CapMultiChoice)}}, false, true},
		{"all lossy allowed, fewest losses first", []Candidate{compat, xlate}, Of(CapStrictTools, CapMultiChoice), LossAllow,
			[]int{1, 0}, nil, true, false},
		{"empty plan", nil, strict, LossReject, []int{}, nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Select(c.cands, c.used, c.onLoss, make([]int, 0, 4))
			if !reflect.DeepEqual(got.Attempt, c.attempt) || !reflect.DeepEqual(got.Passed, c.passed) ||
				got.Lossy != c.lossy || got.Rejected != c.rejected {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestSelectDoesNotAllocateWhenLossless(t *testing.T) {
	cands := []Candidate{{Preserves: AllCaps}, {Preserves: AllCaps}}
	buf := make([]int, 0, 4)
	if n := testing.AllocsPerRun(100, func() { Select(cands, Of(CapStrictTools), LossReject, buf) }); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}

func TestRoutesOf(t *testing.T) {
	names := []string{"a", "b", "c"}
	es := []Entry{{Route: RouteChatCompletions, Model: "a"}, {Route: RouteMessages, Model: "a"}, {Route: RouteEmbeddings, Model: "c"}, {Route: "bogus", Model: "b"}}
	g := &Graph{Names: names, Profiles: []Profile{{Table: 0}}, Tables: []Table{{Entries: es, RouteSets: RouteSetsOf(names, es)}}}
	for name, want := range map[string][]Route{"a": {RouteChatCompletions, RouteMessages}, "b": nil, "c": {RouteEmbeddings}, "zz": nil} {
		if got := g.RoutesOf(0, name); !slices.Equal(got, want) {
			t.Errorf("RoutesOf(%s) = %v, want %v", name, got, want)
		}
	}
}
