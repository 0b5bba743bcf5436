package plan

import (
	"slices"
	"testing"
)

// TestVocabularies holds every list to its Valid: each member is valid and
// listed once, and a near miss (case, empty) is not.
func TestVocabularies(t *testing.T) {
	check := func(name string, values []string, valid func(string) bool) {
		t.Helper()
		for i, v := range values {
			if !valid(v) {
				t.Errorf("%s: listed %q is not Valid", name, v)
			}
			if slices.Index(values, v) != i {
				t.Errorf("%s: %q listed twice", name, v)
			}
		}
		for _, miss := range []string{"", "Bearer", "MINUTE", "total_token", "Reject"} {
			if valid(miss) {
				t.Errorf("%s: %q is Valid", name, miss)
			}
		}
	}
	check("FailureClasses", Names(FailureClasses), func(s string) bool { return FailureClass(s).Valid() })
	check("AuthSchemes", Names(AuthSchemes), func(s string) bool { return AuthScheme(s).Valid() })
	check("CostTypes", Names(CostTypes), func(s string) bool { return CostType(s).Valid() })
	check("LossActions", Names(LossActions), func(s string) bool { return LossAction(s).Valid() })
	check("Windows", Names(Windows), func(s string) bool { return Window(s).Valid() })
	check("BucketScopes", Names(BucketScopes), func(s string) bool { return BucketScope(s).Valid() })
}

func TestNames(t *testing.T) {
	if got := Names([]Window{WindowDay, WindowMinute}); !slices.Equal(got, []string{"day", "minute"}) {
		t.Fatalf("got %q", got)
	}
}
