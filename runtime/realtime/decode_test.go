package realtime

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// msg is one message as the relay hands it to the decoder.
type msg struct {
	binary bool
	body   string
}

// feed runs msgs through a fresh decoder of route in pieces of at most
// piece bytes, and returns what it spent in total, how many increments,
// and why it turned off.
func feed(t *testing.T, route plan.Route, piece int, msgs ...msg) (meter.Usage, int, string) {
	t.Helper()
	var spent meter.Usage
	n, offs := 0, 0
	d := &decoder{route: route, stopped: func(string) { offs++ }, spend: func(u *meter.Usage) {
		n++
		spent.InputTokens += u.InputTokens
		spent.OutputTokens += u.OutputTokens
		spent.TotalTokens += u.TotalTokens
		spent.CachedInputTokens += u.CachedInputTokens
		spent.ReasoningTokens += u.ReasoningTokens
	}}
	for _, m := range msgs {
		b := []byte(m.body)
		before := bytes.Clone(b)
		for lo := 0; lo == 0 || lo < len(b); lo += piece {
			hi := min(lo+piece, len(b))
			d.part(m.binary, b[lo:hi], lo == 0, hi == len(b))
		}
		if !bytes.Equal(b, before) {
			t.Fatal("the decoder changed a message")
		}
	}
	if offs > 1 {
		t.Errorf("the decoder told it turned off %d times", offs)
	}
	spent.Reported = d.total.Reported
	if d.total != spent && d.off == "" {
		t.Errorf("total %+v, but spent %+v", d.total, spent)
	}
	return spent, n, d.off
}

const (
	done1 = `{"type":"response.done","event_id":"e1","response":{"id":"r1","status":"completed","usage":{"total_tokens":131,"input_tokens":120,"output_tokens":11,"input_token_details":{"text_tokens":120,"cached_tokens":0},"output_token_details":{"text_tokens":11}}}}`
	done2 = `{"response":{"usage":{"input_tokens":220,"output_tokens":12,"total_tokens":232,"input_token_details":{"cached_tokens":64,"cached_tokens_details":{"text_tokens":64}}}},"type":"response.done"}`
	trans = `{"type":"conversation.item.input_audio_transcription.completed","item_id":"i","usage":{"type":"tokens","input_tokens":7,"output_tokens":3,"total_tokens":10}}`
	dur   = `{"type":"conversation.item.input_audio_transcription.completed","item_id":"i","usage":{"type":"duration","seconds":2.5}}`
	delta = `{"type":"response.output_text.delta","delta":"hi"}`
)

func TestRealtimeUsageAddsUpPerResponse(t *testing.T) {
	for _, piece := range []int{relayBuffer, 7} {
		u, n, off := feed(t, plan.RouteRealtime, piece, msg{body: delta}, msg{body: done1}, msg{body: trans}, msg{body: dur}, msg{body: done2})
		want := meter.Usage{InputTokens: 347, OutputTokens: 26, TotalTokens: 373, CachedInputTokens: 64, Reported: true}
		if off != "" || n != 3 || u != want {
			t.Errorf("pieces of %d: spent %+v in %d increments (off %q); want %+v in 3", piece, u, n, off, want)
		}
	}
}

func TestDecoderTurnsOffOnWhatItCannotFollow(t *testing.T) {
	long := `{"type":"response.done","response":{"pad":"` + strings.Repeat("x", maxDecoded) + `"}}`
	longAudio := `{"type":"response.output_audio.delta","delta":"` + strings.Repeat("A", maxDecoded) + `"}`
	for _, c := range []struct {
		name  string
		route plan.Route
		msgs  []msg
		off   string
		spent uint64
	}{
		{"binary on Realtime", plan.RouteRealtime, []msg{{binary: true, body: done1}, {body: done2}}, OffBinary, 0},
		{"invalid JSON", plan.RouteRealtime, []msg{{body: done1}, {body: `{"type":"response.done"`}, {body: done2}}, OffInvalid, 131},
		{"usage event past the bound", plan.RouteRealtime, []msg{{body: long}, {body: done2}}, OffTooLarge, 0},
		{"long audio is relayed unread", plan.RouteRealtime, []msg{{body: longAudio}, {body: done1}}, "", 131},
		{"Live JSON in a binary frame", plan.RouteLive, []msg{{binary: true, body: `{"usageMetadata":{"promptTokenCount":5,"responseTokenCount":2,"totalTokenCount":7}}`}}, "", 7},
		{"Live invalid JSON", plan.RouteLive, []msg{{body: `{"serverContent":`}}, OffInvalid, 0},
	} {
		u, _, off := feed(t, c.route, relayBuffer, c.msgs...)
		if off != c.off || u.TotalTokens != c.spent {
			t.Errorf("%s: off %q, spent %d; want off %q, spent %d", c.name, off, u.TotalTokens, c.off, c.spent)
		}
	}
}

func TestLiveUsagePerTurnOrRunning(t *testing.T) {
	content := msg{body: `{"serverContent":{"modelTurn":{"parts":[{"text":"hi"}]}}}`}
	usage := func(p, r int, complete bool) msg {
		b := `{"usageMetadata":{"promptTokenCount":` + strconv.Itoa(p) + `,"responseTokenCount":` + strconv.Itoa(r) + `,"thoughtsTokenCount":1,"totalTokenCount":` + strconv.Itoa(p+r+1) + `}`
		if complete {
			b += `,"serverContent":{"turnComplete":true}`
		}
		return msg{body: b + "}"}
	}
	complete := msg{body: `{"serverContent":{"turnComplete":true}}`}
	want := meter.Usage{InputTokens: 100 + 200, OutputTokens: 11 + 21, ReasoningTokens: 2, TotalTokens: 111 + 221, Reported: true}
	for _, c := range []struct {
		name string
		msgs []msg
	}{
		{"once per turn, with turnComplete", []msg{content, usage(100, 10, true), content, usage(200, 20, true)}},
		{"running within the turn", []msg{content, usage(100, 4, false), content, usage(100, 10, true), content, usage(150, 5, false), usage(200, 20, true)}},
		{"after turnComplete", []msg{content, complete, usage(100, 10, false), content, complete, usage(200, 20, false)}},
	} {
		if u, _, off := feed(t, plan.RouteLive, relayBuffer, c.msgs...); u != want || off != "" {
			t.Errorf("%s: spent %+v (off %q); want %+v", c.name, u, off, want)
		}
	}
}

func TestCloseReasonFitsAFrame(t *testing.T) {
	r := CloseReason(strings.Repeat("é", 100)) // 200 bytes
	if len(r) > maxCloseReason || !strings.HasPrefix(strings.Repeat("é", 100), r) || len(r) != 122 {
		t.Errorf("CloseReason kept %d bytes (%q); want 122, cut on a rune boundary", len(r), r)
	}
	if r := CloseReason("short"); r != "short" {
		t.Errorf("CloseReason(short) = %q", r)
	}
}

func TestSetupNamesTheUpstreamModel(t *testing.T) {
	in := []byte(`{"setup":{"generationConfig":{},"model": "models/gemini-live","tools":[]}}`)
	s, ok := ReadSetup(in)
	if !ok || s.Model != "gemini-live" {
		t.Fatalf("ReadSetup = %+v, %v", s, ok)
	}
	if out := s.For("gemini-live"); !bytes.Equal(out, in) {
		t.Errorf("the same model rewrote the setup: %s", out)
	}
	if out := string(s.For("gemini-2.5-live")); out != `{"setup":{"generationConfig":{},"model": "models/gemini-2.5-live","tools":[]}}` {
		t.Errorf("For = %s", out)
	}
	for _, bad := range []string{`{"clientContent":{}}`, `{"setup":{}}`, `{"setup":{"model":5}}`, `not json`} {
		if _, ok := ReadSetup([]byte(bad)); ok {
			t.Errorf("ReadSetup(%s) accepted", bad)
		}
	}
}
