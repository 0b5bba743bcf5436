package fakeprovider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pistra/pistra/internal/fakeprovider"
)

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// TestMessagesThinkingReplay: thinking blocks carry a signature (streamed
// as signature_delta before the block stops) that a replay must hand back
// unchanged; with display "omitted" the text is left out and the
// signature alone replays. Altered thinking or a signature the fake did
// not issue is refused with a 400, as Anthropic does.
func TestMessagesThinkingReplay(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	think := func(display string) thinkingBlock {
		status, body, _ := post(t, base, "/messages", `{"model":"claude","max_tokens":4096,"thinking":{"type":"adaptive"`+display+`},`+
			`"messages":[{"role":"user","content":"hi"}]}`)
		var msg struct{ Content []thinkingBlock }
		decode(t, body, &msg)
		if status != 200 || len(msg.Content) == 0 || msg.Content[0].Type != "thinking" || msg.Content[0].Signature == "" {
			t.Fatalf("%d %s: want a signed thinking block first", status, body)
		}
		return msg.Content[0]
	}
	shown, omitted := think(""), think(`,"display":"omitted"`)
	if shown.Thinking == "" || omitted.Thinking != "" || omitted.Signature != shown.Signature {
		t.Errorf("shown %+v, omitted %+v: want the same signature, the text only when shown", shown, omitted)
	}
	replay := func(b thinkingBlock) (int, string) {
		block, _ := json.Marshal(b)
		status, body, _ := post(t, base, "/messages", `{"model":"claude","max_tokens":4096,"thinking":{"type":"adaptive"},"messages":[`+
			`{"role":"user","content":"hi"},{"role":"assistant","content":[`+string(block)+`,{"type":"text","text":"Hello."}]},`+
			`{"role":"user","content":"and then?"}]}`)
		return status, string(body)
	}
	for _, ok := range []thinkingBlock{shown, omitted} {
		if status, body := replay(ok); status != 200 {
			t.Errorf("replaying %+v: %d %s", ok, status, body)
		}
	}
	altered, forged := shown, shown
	altered.Thinking += " Or not."
	forged.Signature = "RXFRQg=="
	for _, bad := range []thinkingBlock{altered, forged} {
		if status, body := replay(bad); status != 400 || !strings.Contains(body, "Invalid `signature` in `thinking` block") {
			t.Errorf("replaying %+v: %d %s, want a 400", bad, status, body)
		}
	}
	seen, events := mustStream(t, base, "/messages", `{"model":"claude","max_tokens":4096,"stream":true,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hi"}]}`)
	if seen["content_block_delta"] == 0 {
		t.Fatalf("stream events %v", seen)
	}
	for i, e := range events {
		if strings.Contains(string(e.data), `"signature_delta"`) && (i+1 == len(events) || events[i+1].name != "content_block_stop") {
			t.Errorf("signature_delta is not followed by the block's stop: %s", e.data)
		}
	}
}

// TestMessagesStrictToolSchema: a strict tool whose schema uses a keyword
// outside Anthropic's limits is refused with a 400, as output_config.format
// is; the same schema on a tool that is not strict, or lowered, is taken.
func TestMessagesStrictToolSchema(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	ask := func(strict bool, schema string) (int, string) {
		s := "false"
		if strict {
			s = "true"
		}
		status, body, _ := post(t, base, "/messages", `{"model":"claude","max_tokens":256,"messages":[{"role":"user","content":"hi"}],`+
			`"tools":[{"name":"pick","strict":`+s+`,"input_schema":`+schema+`}]}`)
		return status, string(body)
	}
	bounded := `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5}},"required":["n"],"additionalProperties":false}`
	lowered := `{"type":"object","properties":{"n":{"type":"integer","description":"{minimum: 1, maximum: 5}"}},"required":["n"],"additionalProperties":false}`
	if status, body := ask(true, bounded); status != 400 || !strings.Contains(body, "'minimum' is not supported") {
		t.Errorf("strict tool with minimum: %d %s, want a 400", status, body)
	}
	for _, c := range []struct {
		strict bool
		schema string
	}{{false, bounded}, {true, lowered}} {
		if status, body := ask(c.strict, c.schema); status != 200 || !strings.Contains(body, `"tool_use"`) {
			t.Errorf("strict=%v %s: %d %s, want a tool call", c.strict, c.schema, status, body)
		}
	}
}
