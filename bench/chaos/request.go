package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
)

// spec is one request of the run, a pure function of the seed and its
// index, so a seed replays the same requests.
type spec struct {
	index     int
	anthropic bool // /v1/messages, else /v1/chat/completions
	model     string
	stream    bool
	// usage asks an OpenAI stream for its usage chunk.
	usage bool
	// bearer sends an Anthropic request's key as Authorization: Bearer,
	// as the 1.x SDKs do, rather than x-api-key.
	bearer bool
	sdk    bool
	prompt string
	// abandon, when set, is when the client gives up on the request.
	abandon time.Duration
}

// newSpec draws request i of a run: cfg.sdkShare of them through the
// SDKs, cfg.abandonShare of the raw ones given up by their client at a
// random moment: half within a stream's usual length, half within twice
// the provider timeout (during stalls, retries and failovers).
func newSpec(cfg config, i int) spec {
	seed := cfg.seed
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	s := spec{
		index:     i,
		anthropic: rng.IntN(2) == 0,
		model:     []string{"chat", "claude"}[rng.IntN(2)],
		stream:    rng.IntN(2) == 0,
		usage:     rng.IntN(2) == 0,
		bearer:    rng.IntN(2) == 0,
		sdk:       rng.Float64() < cfg.sdkShare,
	}
	if !s.sdk && rng.Float64() < cfg.abandonShare {
		within := 2 * cfg.timeout
		if rng.IntN(2) == 0 {
			within = max(40*cfg.pace, 20*time.Millisecond)
		}
		s.abandon = 1 + time.Duration(rng.Float64()*float64(within))
	}
	// The fake echoes the first six words, so the answer names the request.
	s.prompt = fmt.Sprintf("chaos request %d seed %d", i, seed)
	return s
}

// want is the text the fake answers s with.
func (s spec) want() string { return fakeprovider.ReplyText(s.prompt) }

func (s spec) String() string {
	d := "openai"
	if s.anthropic {
		d = "anthropic"
	}
	mode := "whole"
	if s.stream {
		mode = "stream"
	}
	via := "raw"
	switch {
	case s.sdk:
		via = "sdk"
	case s.abandon > 0:
		via = "abandoned after " + s.abandon.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("#%d %s %s %s %s", s.index, d, s.model, mode, via)
}

func (s spec) body() []byte {
	m := map[string]any{
		"model":    s.model,
		"messages": []map[string]string{{"role": "user", "content": s.prompt}},
	}
	if s.stream {
		m["stream"] = true
	}
	if s.anthropic {
		m["max_tokens"] = 256
	} else if s.stream && s.usage {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m) // strings and numbers: cannot fail
	return b
}

// sendRaw sends s with a plain net/http client and reads every byte of
// the answer, within the hang bound.
func sendRaw(client *http.Client, base string, s spec, hang time.Duration) outcome {
	hangCtx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	ctx := hangCtx
	if s.abandon > 0 {
		abandonCtx, abandon := context.WithTimeout(hangCtx, s.abandon)
		defer abandon()
		ctx = abandonCtx
	}
	// gaveUp: the client's own abandon, not the hang bound, ended it.
	gaveUp := func(err error) bool { return err != nil && ctx.Err() != nil && hangCtx.Err() == nil }
	path := "/v1/chat/completions"
	if s.anthropic {
		path = "/v1/messages"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(s.body()))
	req.Header.Set("Content-Type", "application/json")
	switch {
	case !s.anthropic || s.bearer:
		req.Header.Set("Authorization", "Bearer "+clientKey)
	default:
		req.Header.Set("X-Api-Key", clientKey)
	}
	if s.anthropic {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	resp, err := client.Do(req)
	switch {
	case gaveUp(err):
		return outcome{verdict: abandoned, detail: "before the response headers"}
	case err != nil:
		return transportFailure(hangCtx, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	a.body, a.readErr = io.ReadAll(resp.Body)
	switch {
	case gaveUp(a.readErr):
		return outcome{verdict: abandoned, detail: fmt.Sprintf("after %d bytes", len(a.body))}
	case a.readErr != nil && hangCtx.Err() != nil:
		return outcome{verdict: hung, detail: fmt.Sprintf("%d, %d bytes read when the hang bound passed: ...%s", a.status, len(a.body), clipEnd(a.body))}
	}
	return classify(s, a)
}

// transportFailure judges a request that got no response: hung when the
// bound passed, else an empty reply (the connection closed or reset).
func transportFailure(ctx context.Context, err error) outcome {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return outcome{verdict: hung, detail: "no response headers within the hang bound"}
	}
	detail := err.Error()
	if errors.Is(err, syscall.ECONNREFUSED) {
		detail = "pistrad refused the connection: " + detail
	}
	return outcome{verdict: empty, detail: detail}
}
