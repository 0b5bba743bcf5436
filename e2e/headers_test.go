package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUpstreamRequestIsBuiltFromScratch sends a request full of headers a
// gateway must not forward and a body laid out oddly, then reads what the
// upstream received: the provider's credential only, no hop-by-hop header,
// the allow-listed ones intact, and the body byte for byte the client's
// with only the model value changed.
func TestUpstreamRequestIsBuiltFromScratch(t *testing.T) {
	e := start(t)
	body := `{ "messages" : [{"role":"user","content":"the model field is \"model\""}],` +
		"\n\t\"model\" :  \"fast\" , \"metadata\":{\"model\":\"keep-me\"} }"
	req, err := http.NewRequest(http.MethodPost, e.baseURL()+"chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := req.Header
	h.Set("Authorization", "Bearer "+keyDefault)
	h.Set("X-Api-Key", keyDefault)
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Connection", "keep-alive, X-Stainless-Hop")
	h.Set("X-Stainless-Hop", "named by Connection")
	h.Set("X-Stainless-Lang", "go")
	h.Set("Keep-Alive", "timeout=5")
	h.Set("TE", "trailers")
	h.Set("Trailer", "X-Checksum")
	h.Set("Upgrade", "h2c")
	h.Set("Proxy-Authorization", "Basic c2VjcmV0")
	h.Set("Cookie", "session=client")
	h.Set("OpenAI-Project", "proj-e2e")
	h.Set("User-Agent", "e2e-client/1.0")
	h.Set("X-Request-Id", "client-req-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Pistra-Request-Id") != "client-req-42" {
		t.Fatalf("status %d, request id %q", resp.StatusCode, resp.Header.Get("Pistra-Request-Id"))
	}

	call := lastCall(t, e.openai)
	wantBody := strings.Replace(body, `"fast"`, `"gpt-4o-mini"`, 1)
	if string(call.Body) != wantBody || call.BodySize != len(wantBody) {
		t.Errorf("upstream body\n got  %s\n want %s", call.Body, wantBody)
	}
	for _, name := range []string{"X-Api-Key", "Connection", "X-Stainless-Hop", "Keep-Alive", "Te", "Trailer",
		"Upgrade", "Proxy-Authorization", "Cookie", "Openai-Project"} {
		if v, ok := call.Header[name]; ok {
			t.Errorf("upstream received %s: %q", name, v)
		}
	}
	want := map[string]string{
		"Authorization":    "Bearer " + secretOpenAI,
		"X-Stainless-Lang": "go",
		"User-Agent":       "e2e-client/1.0",
		"X-Request-Id":     "client-req-42",
		"Content-Type":     "application/json",
	}
	for name, v := range want {
		if got := call.Header.Get(name); got != v {
			t.Errorf("upstream %s = %q, want %q", name, got, v)
		}
	}
}
