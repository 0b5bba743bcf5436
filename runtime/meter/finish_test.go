package meter

import (
	"slices"
	"testing"
)

func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		body  string
		want  []string
	}{
		{ShapeChat, `{"id":"c","choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},{"index":1,"finish_reason":"length"}],"usage":{}}`, []string{"stop", "length"}},
		{ShapeChat, `{"choices":[{"index":0,"finish_reason":null}]}`, nil},
		{ShapeChat, `{"object":"list","data":[{"embedding":[0.1]}]}`, nil},
		{ShapeMessages, `{"type":"message","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn","usage":{}}`, []string{"end_turn"}},
		{ShapeResponses, `{"object":"response","status":"incomplete","output":[]}`, []string{"incomplete"}},
		// Another shape's field is not this shape's reason.
		{ShapeChat, `{"stop_reason":"end_turn"}`, nil},
		{ShapeMessages, `not json`, nil},
	} {
		if got := FinishReasons(tc.shape, []byte(tc.body), nil); !slices.Equal(got, tc.want) {
			t.Errorf("%v %s: %q, want %q", tc.shape, tc.body, got, tc.want)
		}
	}
}
