package schema_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/schema"
)

// TestIRSchemaEnumsArePlanLists keeps every enumeration of the IR schema
// equal, value for value and in order, to the runtime/plan list it spells,
// so a value added to a list fails here until the schema has it too.
func TestIRSchemaEnumsArePlanLists(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(schema.IRSchema, &doc); err != nil {
		t.Fatal(err)
	}
	for pointer, want := range map[string][]string{
		"$defs/Route":                          plan.Names(plan.Routes),
		"$defs/Capability":                     plan.CapNames(),
		"$defs/FailureClass":                   plan.Names(plan.FailureClasses),
		"$defs/OnFidelityLoss":                 plan.Names(plan.LossActions),
		"$defs/AuthScheme":                     plan.Names(plan.AuthSchemes),
		"$defs/Budget/properties/window":       plan.Names(plan.Windows),
		"$defs/Budget/properties/per":          plan.Names(plan.BucketScopes),
		"$defs/Budget/properties/cost_type":    plan.Names(plan.CostTypes),
		"$defs/Pool/properties/picker_failure": plan.Names(plan.PickerFailures),
	} {
		var node any = doc
		for _, k := range strings.Split(pointer, "/") {
			obj, _ := node.(map[string]any)
			node = obj[k]
		}
		obj, _ := node.(map[string]any)
		raw, _ := obj["enum"].([]any)
		got := make([]string, len(raw))
		for i, v := range raw {
			got[i], _ = v.(string)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: schema enumerates %q, runtime/plan lists %q", pointer, got, want)
		}
	}
}

// TestPolicyDefaultsArePlanValues checks the defaults the CUE schema fills
// in are the plan values the rest of pistra documents as the defaults.
func TestPolicyDefaultsArePlanValues(t *testing.T) {
	root := cuecontext.New().CompileBytes(schema.PolicyCUE)
	if err := root.Err(); err != nil {
		t.Fatal(err)
	}
	for at, want := range map[string]string{
		"#Policy.on_fidelity_loss": string(plan.LossReject),
		"#Budget.per":              string(plan.PerKey),
		"#Budget.cost.type":        string(plan.CostTotalToken),
	} {
		def, ok := root.LookupPath(cue.ParsePath(at)).Default()
		if !ok {
			t.Errorf("%s: no default", at)
			continue
		}
		if got, err := def.String(); err != nil || got != want {
			t.Errorf("%s: default %q (%v), want %q", at, got, err, want)
		}
	}
}
