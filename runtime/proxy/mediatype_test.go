package proxy

import (
	"net/http"
	"testing"
)

// TestAnswerMediaTypes: an answer is read as JSON or as an event stream
// by its media type alone, whatever its parameters and case, and reading
// it allocates nothing.
func TestAnswerMediaTypes(t *testing.T) {
	for _, c := range []struct {
		ct            string
		json, streams bool
	}{
		{"application/json", true, false},
		{"application/json; charset=utf-8", true, false},
		{"Application/JSON ;charset=UTF-8", true, false},
		{"application/problem+json", true, false},
		{"application/vnd.api+JSON; q=1", true, false},
		{"text/event-stream", false, true},
		{"text/event-stream; charset=utf-8", false, true},
		{" Text/Event-Stream ", false, true},
		{"text/event-stream-ish", false, false},
		{"text/plain", false, false},
		{"+json", false, false},
		{"", false, false},
	} {
		h := http.Header{"Content-Type": {c.ct}}
		if got := isJSON(h); got != c.json {
			t.Errorf("isJSON(%q) = %v, want %v", c.ct, got, c.json)
		}
		if got := isEventStream(h); got != c.streams {
			t.Errorf("isEventStream(%q) = %v, want %v", c.ct, got, c.streams)
		}
	}
	h := http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	if n := testing.AllocsPerRun(100, func() { isEventStream(h); isJSON(h) }); n != 0 {
		t.Errorf("%v allocations per answer", n)
	}
}
