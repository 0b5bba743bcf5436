package caps

import (
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
)

// capCase is one body and the capabilities its route's reader must report.
type capCase struct {
	name string
	body string
	want plan.CapSet
}

// runCases checks Read on every case, and that the prefilter never hides
// what the structural confirm would find.
func runCases(t *testing.T, route plan.Route, cases []capCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			if got := Read(route, body); got != tc.want {
				t.Errorf("Read(%s) = %v, want %v\nbody: %s", route, got, tc.want, tc.body)
			}
			if d := dialectFor(route); d != nil {
				if full := d.confirm(body); full != tc.want {
					t.Errorf("confirm without prefilter = %v, want %v", full, tc.want)
				}
			}
		})
	}
}

var (
	capsNone       plan.CapSet
	strictTools    = plan.Of(plan.CapStrictTools)
	structured     = plan.Of(plan.CapStructuredOutput)
	promptCaching  = plan.Of(plan.CapPromptCaching)
	thinking       = plan.Of(plan.CapExtendedThinking)
	audioInput     = plan.Of(plan.CapAudioInput)
	multiChoice    = plan.Of(plan.CapMultiChoice)
	everyChatCap   = strictTools | structured | promptCaching | thinking | audioInput | multiChoice
	everyAnthropic = strictTools | structured | promptCaching | thinking
)

func TestDetectable(t *testing.T) {
	want := map[plan.Route]plan.CapSet{
		plan.RouteChatCompletions: everyChatCap,
		plan.RouteCompletions:     multiChoice,
		plan.RouteEmbeddings:      capsNone,
		plan.RouteResponses:       strictTools | structured | promptCaching | thinking | audioInput,
		plan.RouteMessages:        everyAnthropic,
		plan.Route("unknown"):     capsNone,
	}
	for route, w := range want {
		if got := Detectable(route); got != w {
			t.Errorf("Detectable(%s) = %v, want %v", route, got, w)
		}
		if Detectable(route).Has(plan.CapUsageDetails) {
			t.Errorf("Detectable(%s) reports usage_details, a profile pin", route)
		}
	}
}

func TestReadEmbeddingsAndUnknownRoutes(t *testing.T) {
	body := []byte(`{"model":"m","input":"x","n":2,"strict":true,"prompt_cache_key":"k"}`)
	for _, route := range []plan.Route{plan.RouteEmbeddings, "", "unknown"} {
		if got := Read(route, body); got != 0 {
			t.Errorf("Read(%q) = %v, want nothing", route, got)
		}
	}
}

func TestReaderReadsOnceAndOnlyWhenAsked(t *testing.T) {
	body := []byte(`{"model":"m","messages":[],"n":2}`)
	var r Reader
	r.Reset(plan.RouteChatCompletions, body)

	// Reset must not read: a change made before the first Caps is seen.
	copy(body[strings.Index(string(body), "2"):], "3")
	if got := r.Caps(); got != multiChoice {
		t.Fatalf("first Caps = %v, want %v", got, multiChoice)
	}
	// Caps must not read again: a change made after it is not seen.
	copy(body[strings.Index(string(body), "3"):], "1")
	if got := r.Caps(); got != multiChoice {
		t.Fatalf("second Caps = %v, want the memoized %v", got, multiChoice)
	}
	// Reset starts a new request.
	r.Reset(plan.RouteChatCompletions, body)
	if got := r.Caps(); got != 0 {
		t.Fatalf("Caps after Reset = %v, want nothing (n is now 1)", got)
	}
	var zero Reader
	if got := zero.Caps(); got != 0 {
		t.Fatalf("zero Reader Caps = %v, want nothing", got)
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	bodies := map[plan.Route]string{
		plan.RouteChatCompletions: `{"model":"m","n":2,"reasoning_effort":"high","prompt_cache_key":"k",` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{},"strict":true}},` +
			`"tools":[{"type":"function","function":{"name":"f","strict":true}}],` +
			`"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`,
		plan.RouteCompletions: `{"model":"m","prompt":"x","n":1e1,"best_of":3}`,
		plan.RouteResponses: `{"model":"m","reasoning":{"effort":"low"},"text":{"format":{"type":"json_object"}},` +
			`"tools":[{"type":"function","name":"f","strict":true}],"input":"hi"}`,
		plan.RouteMessages: `{"model":"m","max_tokens":9,"thinking":{"type":"enabled","budget_tokens":2048},` +
			`"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"f","input_schema":{},"strict":true}],"messages":[]}`,
	}
	for route, body := range bodies {
		b := []byte(body)
		if Read(route, b) == 0 {
			t.Fatalf("%s: test body reports nothing", route)
		}
		if n := testing.AllocsPerRun(100, func() { Read(route, b) }); n != 0 {
			t.Errorf("Read(%s) allocates %v times per call", route, n)
		}
	}
}
