package dialect

import (
	"encoding/json"
	"testing"
)

func TestAskUsage(t *testing.T) {
	tests := []struct {
		name, body string
		canAsk     bool
		asked      bool
	}{
		{"no options", `{"model":"pub","stream":true,"messages":[]}`, true, false},
		{"null options", `{"model":"pub","stream":true,"stream_options":null}`, true, false},
		{"empty options", `{"stream":true,"stream_options":{ },"model":"pub"}`, true, false},
		{"other options", `{"stream":true,"stream_options":{"include_obfuscation":false},"model":"pub"}`, true, false},
		{"usage false", `{"stream":true,"stream_options":{"include_usage":false,"x":1},"model":"pub"}`, true, false},
		{"usage true: the client asked", `{"stream":true,"stream_options":{"include_usage":true},"model":"pub"}`, false, true},
		{"not streamed", `{"model":"pub","messages":[]}`, false, false},
		{"stream false", `{"model":"pub","stream":false}`, false, false},
		{"options twice", `{"stream":true,"stream_options":{},"stream_options":{},"model":"pub"}`, false, false},
		{"include_usage twice", `{"stream":true,"stream_options":{"include_usage":false,"include_usage":false},"model":"pub"}`, false, false},
		{"options not an object", `{"stream":true,"stream_options":"yes","model":"pub"}`, false, false},
		{"include_usage not a bool", `{"stream":true,"stream_options":{"include_usage":1},"model":"pub"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ReadHead([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Stream.CanAskUsage(); got != tt.canAsk || h.Stream.AskedUsage != tt.asked {
				t.Fatalf("CanAskUsage %v AskedUsage %v, want %v %v", got, h.Stream.AskedUsage, tt.canAsk, tt.asked)
			}
			for _, model := range []string{"pub", `up-"model"`} {
				out := AppendRequest(nil, []byte(tt.body), &h, model, tt.canAsk)
				var got map[string]any
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%s: edited body is not JSON: %v", out, err)
				}
				if got["model"] != model {
					t.Errorf("%s: model %v, want %q", out, got["model"], model)
				}
				if opts, _ := got["stream_options"].(map[string]any); tt.canAsk && opts["include_usage"] != true {
					t.Errorf("%s: does not ask for usage", out)
				}
				if !tt.canAsk && model == "pub" && string(out) != tt.body {
					t.Errorf("unedited body changed: %s", out)
				}
			}
		})
	}
}

func TestAppendRequestKeepsTheRest(t *testing.T) {
	body := `{"stream":true, "model" : "pub", "stream_options":{"include_usage":false},"n":1}`
	h, err := ReadHead([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	got := string(AppendRequest(nil, []byte(body), &h, "up", true))
	want := `{"stream":true, "model" : "up", "stream_options":{"include_usage":true},"n":1}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	body = `{"model":"pub","stream":true}`
	h, _ = ReadHead([]byte(body))
	got = string(AppendRequest(nil, []byte(body), &h, "up", true))
	if want := `{"stream_options":{"include_usage":true},"model":"up","stream":true}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	body := []byte(`{"model":"pub","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	h, _ := ReadHead(body)
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendRequest(dst[:0], body, &h, "upstream-model", true)
	}
}
