package fakeprovider_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// chaosOutcome sends one raw call and sums up how it went: "reset" (no
// response), the status, and for a 200 whether the body ended cleanly.
func chaosOutcome(t *testing.T, base, path, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(base, "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	// A fresh connection per call, so a reset cannot be mistaken for a
	// stale pooled one.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "EOF") {
			return "reset"
		}
		t.Fatalf("call: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return fmt.Sprintf("%d cut", resp.StatusCode)
	case resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"error"`):
		return "200 error-event"
	}
	return fmt.Sprint(resp.StatusCode)
}

// TestChaosDrawIsReproducible: a server given a seed fails calls the same
// way as another given the same seed, call for call, and each retry of a
// body draws afresh; another seed fails them differently.
func TestChaosDrawIsReproducible(t *testing.T) {
	run := func(seed uint64) []string {
		_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey,
			Chaos: fakeprovider.Chaos{Seed: seed, Rate: 0.6, Kinds: []fakeprovider.ChaosKind{
				fakeprovider.Chaos500, fakeprovider.Chaos503, fakeprovider.ChaosReset, fakeprovider.ChaosHalfBody}}})
		var out []string
		for i := range 12 {
			body := fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"call %d"}]}`, i%4)
			out = append(out, chaosOutcome(t, base, "/v1/chat/completions", body))
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different faults:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 7 and 8 drew the same faults: %v", a)
	}
	kinds := map[string]bool{}
	for _, o := range a {
		kinds[o] = true
	}
	if len(kinds) < 3 {
		t.Errorf("12 calls at rate 0.6 met fewer than 3 outcomes: %v", a)
	}
}

// TestChaosKinds: each kind does to a call what it says, and is drawn only
// for calls it applies to.
func TestChaosKinds(t *testing.T) {
	stream := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello there"}]}`
	whole := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello there"}]}`
	messages := `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hello there"}]}`
	for _, tc := range []struct {
		kind    fakeprovider.ChaosKind
		dialect fakeprovider.Dialect
		path    string
		body    string
		want    string
	}{
		{fakeprovider.Chaos502, fakeprovider.DialectOpenAI, "/v1/chat/completions", whole, "502"},
		{fakeprovider.Chaos429, fakeprovider.DialectOpenAI, "/v1/chat/completions", stream, "429"},
		{fakeprovider.Chaos529, fakeprovider.DialectAnthropic, "/v1/messages", messages, "529"},
		// 529 is Anthropic's own: an OpenAI answer never gets it.
		{fakeprovider.Chaos529, fakeprovider.DialectOpenAI, "/v1/chat/completions", whole, "200"},
		{fakeprovider.ChaosReset, fakeprovider.DialectOpenAI, "/v1/chat/completions", stream, "reset"},
		{fakeprovider.ChaosCut, fakeprovider.DialectOpenAI, "/v1/chat/completions", stream, "200 cut"},
		{fakeprovider.ChaosCut, fakeprovider.DialectOpenAI, "/v1/chat/completions", whole, "200"},
		{fakeprovider.ChaosOpeningError, fakeprovider.DialectOpenAI, "/v1/chat/completions", stream, "200 error-event"},
		{fakeprovider.ChaosHalfBody, fakeprovider.DialectAnthropic, "/v1/messages", messages, "200 cut"},
		{fakeprovider.ChaosHalfBody, fakeprovider.DialectOpenAI, "/v1/chat/completions", stream, "200"},
	} {
		t.Run(string(tc.kind)+" "+string(tc.dialect)+" "+tc.want, func(t *testing.T) {
			_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: tc.dialect, Key: testKey,
				Chaos: fakeprovider.Chaos{Seed: 1, Rate: 1, Kinds: []fakeprovider.ChaosKind{tc.kind}}})
			if got := chaosOutcome(t, base, tc.path, tc.body); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestChaosStall: the stalls hold the first byte, or the second half of a
// whole answer, back for Stall; the answer then arrives whole.
func TestChaosStall(t *testing.T) {
	for _, kind := range []fakeprovider.ChaosKind{fakeprovider.ChaosStall, fakeprovider.ChaosStallBody} {
		t.Run(string(kind), func(t *testing.T) {
			_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey,
				Chaos: fakeprovider.Chaos{Seed: 1, Rate: 1, Stall: 300 * time.Millisecond, Kinds: []fakeprovider.ChaosKind{kind}}})
			start := time.Now()
			if got := chaosOutcome(t, base, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); got != "200" {
				t.Fatalf("got %s", got)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Errorf("answered after %v, before the stall ended", d)
			}
		})
	}
}

func TestChaosValidate(t *testing.T) {
	if _, err := fakeprovider.ParseChaosKinds("500,bogus"); err == nil {
		t.Error("an unknown kind parsed")
	}
	if ks, err := fakeprovider.ParseChaosKinds("all"); err != nil || len(ks) != len(fakeprovider.ChaosKinds) {
		t.Errorf("all: %v %v", ks, err)
	}
	if _, err := fakeprovider.New(fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Chaos: fakeprovider.Chaos{Rate: 1.5}}); err == nil {
		t.Error("a rate above 1 was accepted")
	}
}

// TestChaosKeepsFaults: calls Chaos does not spoil keep the server's Faults.
func TestChaosKeepsFaults(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey,
		Faults: fakeprovider.Faults{FailStatus: 503}, Chaos: fakeprovider.Chaos{Seed: 1, Rate: 1e-12}})
	if got := chaosOutcome(t, base, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); got != "503" {
		t.Errorf("got %s, want the server's own 503", got)
	}
}
