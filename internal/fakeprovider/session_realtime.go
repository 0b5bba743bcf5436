package fakeprovider

import (
	"context"
	"encoding/json"
	"fmt"
)

// realtimeUsage is the usage the fake reports for its n-th response (from
// 1): the input grows each turn, as earlier turns' output becomes later
// turns' input, and part of it is cached after the first.
func realtimeUsage(n int) SessionUsage {
	in, out := uint64(100*n+20), uint64(10+n)
	return SessionUsage{Input: in, Output: out, Cached: uint64(64 * (n - 1)), Total: in + out}
}

// transcriptionUsage is what each committed input audio buffer's
// transcription reports.
var transcriptionUsage = SessionUsage{Input: 7, Output: 3, Total: 10}

// realtime serves an OpenAI Realtime session: session.created, then per
// response.create a short text response and its response.done with usage,
// per input_audio_buffer.commit a transcription with its own usage.
func (f *fakeSession) realtime() error {
	if err := f.send(fmt.Appendf(nil, `{"type":"session.created","event_id":"evt_0","session":{"id":"sess_1","type":"realtime","model":%q,"object":"realtime.session"}}`, f.model)); err != nil {
		return err
	}
	for {
		_, msg, err := f.c.Read(context.Background())
		if err != nil {
			return err
		}
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(msg, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "session.update":
			err = f.send(fmt.Appendf(nil, `{"type":"session.updated","event_id":"evt_u","session":{"id":"sess_1","type":"realtime","model":%q}}`, f.model))
		case "input_audio_buffer.commit":
			u := transcriptionUsage
			f.s.reported(u) // before the client can have read it
			err = f.send(fmt.Appendf(nil, `{"type":"conversation.item.input_audio_transcription.completed","event_id":"evt_t","item_id":"item_in","content_index":0,"transcript":"hello","usage":{"type":"tokens","input_tokens":%d,"output_tokens":%d,"total_tokens":%d,"input_token_details":{"text_tokens":0,"audio_tokens":%d}}}`,
				u.Input, u.Output, u.Total, u.Input))
		case "response.create":
			if err = f.response(); err == nil {
				err = f.afterResponse()
			}
		}
		if err != nil {
			return err
		}
	}
}

// response sends one response's events.
func (f *fakeSession) response() error {
	n := f.responses + 1
	id := fmt.Sprintf("resp_%d", n)
	msgs := []string{
		fmt.Sprintf(`{"type":"response.created","event_id":"evt_%d_0","response":{"id":%q,"object":"realtime.response","status":"in_progress"}}`, n, id),
		fmt.Sprintf(`{"type":"response.output_text.delta","event_id":"evt_%d_1","response_id":%q,"item_id":"item_%d","output_index":0,"content_index":0,"delta":"Hello"}`, n, id, n),
		fmt.Sprintf(`{"type":"response.output_text.delta","event_id":"evt_%d_2","response_id":%q,"item_id":"item_%d","output_index":0,"content_index":0,"delta":" again"}`, n, id, n),
	}
	for _, m := range msgs {
		if err := f.send([]byte(m)); err != nil {
			return err
		}
	}
	u := realtimeUsage(n)
	done := fmt.Appendf(nil, `{"type":"response.done","event_id":"evt_%d_3","response":{"id":%q,"object":"realtime.response","status":"completed","metadata":{"pad":%q},`+
		`"usage":{"total_tokens":%d,"input_tokens":%d,"output_tokens":%d,"input_token_details":{"text_tokens":%d,"audio_tokens":0,"image_tokens":0,"cached_tokens":%d,"cached_tokens_details":{"text_tokens":%d,"audio_tokens":0,"image_tokens":0}},"output_token_details":{"text_tokens":%d,"audio_tokens":0}}}}`,
		n, id, f.pad(), u.Total, u.Input, u.Output, u.Input, u.Cached, u.Cached, u.Output)
	f.s.reported(u)
	return f.send(done)
}
