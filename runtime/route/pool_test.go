package route

import (
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// TestMembers: a pooled candidate is named with the member set its subset
// leaves it and who picks the member, the picker's failure mode with it;
// a candidate with a URL of its own has none, and the preflight answer's
// attempt order carries the same.
func TestMembers(t *testing.T) {
	native := []plan.Channel{{Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative}}
	g := &plan.Graph{
		Pools: []plan.Pool{
			{Name: "gpus", DNS: "vllm:8000", Subsets: []plan.Subset{{Name: "h100", DNS: "h100:8000"}},
				Picker: "epp:9002", PickerTimeoutMS: 500, PickerFailure: plan.PickerFailOpen},
			{Name: "edge", DNS: "edge:8000"},
		},
		Providers: []plan.Provider{
			{Name: "vllm", Pool: 0, Channels: native},
			{Name: "small", Pool: 1, Channels: native},
			{Name: "hosted", Pool: -1, BaseURL: "https://api/v1", Channels: native},
		},
	}
	for _, tt := range []struct {
		c    plan.Candidate
		want *dialect.Pool
	}{
		{plan.Candidate{Provider: 0, PoolSubset: "h100"}, &dialect.Pool{Name: "gpus", Subset: "h100", Members: "h100:8000",
			Pick: dialect.PickPicker, Picker: "epp:9002", PickerFailure: plan.PickerFailOpen, PickerTimeoutMS: 500}},
		{plan.Candidate{Provider: 0}, &dialect.Pool{Name: "gpus", Members: "vllm:8000",
			Pick: dialect.PickPicker, Picker: "epp:9002", PickerFailure: plan.PickerFailOpen, PickerTimeoutMS: 500}},
		{plan.Candidate{Provider: 1}, &dialect.Pool{Name: "edge", Members: "edge:8000", Pick: dialect.PickRoundRobin}},
		{plan.Candidate{Provider: 2}, nil},
	} {
		got := Members(g, &tt.c)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%+v: %+v, want %+v", tt.c, got, tt.want)
		}
		var a Answer
		a.Attempt(g, &tt.c, 0)
		if p := a.AttemptOrder[0].Pool; (p == nil) != (tt.want == nil) || (p != nil && *p != *tt.want) {
			t.Errorf("%+v: preflight names %+v", tt.c, p)
		}
	}
}
