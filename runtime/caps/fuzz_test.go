package caps

import (
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// fuzzRead checks, for any body on route: Read does not panic, reports only
// capabilities the route can carry, agrees with a confirm run without the
// prefilter (so no needle list hides a capability), and agrees with a
// Reader.
func fuzzRead(f *testing.F, route plan.Route, seeds ...[]capCase) {
	for _, cases := range seeds {
		for _, tc := range cases {
			f.Add([]byte(tc.body))
		}
	}
	d := dialectFor(route)
	f.Fuzz(func(t *testing.T, body []byte) {
		got := Read(route, body)
		if got&^Detectable(route) != 0 {
			t.Fatalf("Read(%s) = %v, outside %v", route, got, Detectable(route))
		}
		if full := d.confirm(body); full != got {
			t.Fatalf("Read(%s) = %v, confirm without prefilter = %v", route, got, full)
		}
		var r Reader
		r.Reset(route, body)
		if rc := r.Caps(); rc != got {
			t.Fatalf("Reader = %v, Read = %v", rc, got)
		}
	})
}

// Each route is also seeded with the other dialects' cases, so the fuzzer
// starts from foreign shapes as well as its own.
func FuzzReadChatCompletions(f *testing.F) {
	fuzzRead(f, plan.RouteChatCompletions, chatCases, responsesCases, messagesCases)
}

func FuzzReadCompletions(f *testing.F) {
	fuzzRead(f, plan.RouteCompletions, completionsCases, chatCases)
}

func FuzzReadResponses(f *testing.F) {
	fuzzRead(f, plan.RouteResponses, responsesCases, chatCases, messagesCases)
}

func FuzzReadMessages(f *testing.F) {
	fuzzRead(f, plan.RouteMessages, messagesCases, chatCases, responsesCases)
}
