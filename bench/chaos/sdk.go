package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// The SDK share of the run: the official clients, through a transport that
// keeps a copy of every byte they read, so each SDK request is judged on
// the bytes as a raw one is, and the SDK's own verdict is held to it: an
// answer that was not served must be an error to the SDK too, and a served
// one must not be.

// tee is the transport under the SDK clients; it records the one response
// of each request (the SDK clients make no retries).
type tee struct {
	rt http.RoundTripper
	mu sync.Mutex
	// got is keyed by the request's index, which the SDK call carries in
	// indexHeader for the tee alone.
	got map[string]*teeBody
}

const indexHeader = "Chaos-Index"

func (t *tee) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Header.Get(indexHeader)
	req = req.Clone(req.Context())
	req.Header.Del(indexHeader)
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &teeBody{rc: resp.Body, status: resp.StatusCode, header: resp.Header}
	resp.Body = b
	t.mu.Lock()
	t.got[key] = b
	t.mu.Unlock()
	return resp, nil
}

// take returns and forgets what request i received; nil when no response
// came.
func (t *tee) take(i int) *teeBody {
	key := strconv.Itoa(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.got[key]
	delete(t.got, key)
	return b
}

// teeBody copies what the SDK reads; on Close it reads on to the end, so
// the copy holds the whole answer even when the SDK stopped early (an
// OpenAI stream stops at [DONE]).
type teeBody struct {
	rc      io.ReadCloser
	status  int
	header  http.Header
	mu      sync.Mutex
	buf     bytes.Buffer
	readErr error
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	b.buf.Write(p[:n])
	if err != nil && err != io.EOF && b.readErr == nil {
		b.readErr = err
	}
	b.mu.Unlock()
	return n, err
}

func (b *teeBody) Close() error {
	_, _ = io.Copy(io.Discard, b) // through Read, so the rest is copied
	return b.rc.Close()
}

func (b *teeBody) answer() answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return answer{status: b.status, header: b.header, body: bytes.Clone(b.buf.Bytes()), readErr: b.readErr}
}

// sdkClients are the two official clients of the gateway, on one tee.
type sdkClients struct {
	tee       *tee
	openai    openai.Client
	anthropic anthropic.Client
}

func newSDKClients(base string, rt http.RoundTripper) *sdkClients {
	t := &tee{rt: rt, got: map[string]*teeBody{}}
	hc := &http.Client{Transport: t}
	return &sdkClients{
		tee:       t,
		openai:    sdkclient.OpenAI(base+"/v1/", clientKey, option.WithHTTPClient(hc)),
		anthropic: sdkclient.Anthropic(base+"/v1/", clientKey, aoption.WithHTTPClient(hc)),
	}
}

// sendSDK sends s through its dialect's SDK. The outcome is judged on the
// bytes received; sdkAgrees reports whether the SDK's verdict matches it:
// the right text for a served answer, an error for a clean error.
func (c *sdkClients) sendSDK(s spec, hang time.Duration) (o outcome, sdkAgrees bool, sdkErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	var text string
	var err error
	if s.anthropic {
		text, err = c.anthropicCall(ctx, s)
	} else {
		text, err = c.openaiCall(ctx, s)
	}
	got := c.tee.take(s.index)
	switch {
	case got == nil && err == nil:
		return outcome{verdict: corrupt, detail: "the SDK returned no error and no response came"}, false, nil
	case got == nil:
		return transportFailure(ctx, err), true, err
	}
	a := got.answer()
	if ctx.Err() != nil {
		return outcome{verdict: hung, detail: fmt.Sprintf("%d, %d bytes read when the hang bound passed", a.status, len(a.body))}, true, err
	}
	o = classify(s, a)
	switch {
	case o.verdict.bad():
		// The verdict fails the run already; the SDKs themselves accept a
		// stream that stops short of its terminal event.
		return o, true, err
	case o.verdict == served:
		return o, err == nil && text == s.want(), err
	}
	return o, err != nil, err // a clean error must be an error to the SDK
}

func (c *sdkClients) openaiCall(ctx context.Context, s spec) (string, error) {
	p := openai.ChatCompletionNewParams{
		Model:    s.model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s.prompt)},
	}
	if !s.stream {
		got, err := c.openai.Chat.Completions.New(ctx, p, option.WithHeader(indexHeader, strconv.Itoa(s.index)))
		if err != nil {
			return "", err
		}
		if len(got.Choices) != 1 {
			return "", fmt.Errorf("%d choices", len(got.Choices))
		}
		return got.Choices[0].Message.Content, nil
	}
	if s.usage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	st := c.openai.Chat.Completions.NewStreaming(ctx, p, option.WithHeader(indexHeader, strconv.Itoa(s.index)))
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		return "", err
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason == "" {
		return "", errors.New("the stream ended without a finished choice")
	}
	return acc.Choices[0].Message.Content, nil
}

func (c *sdkClients) anthropicCall(ctx context.Context, s spec) (string, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(s.model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(s.prompt))},
	}
	var msg anthropic.Message
	if s.stream {
		st := c.anthropic.Messages.NewStreaming(ctx, p, aoption.WithHeader(indexHeader, strconv.Itoa(s.index)))
		defer st.Close()
		var err error
		if msg, err = sdkclient.ReadMessage(st); err != nil {
			return "", err
		}
	} else {
		got, err := c.anthropic.Messages.New(ctx, p, aoption.WithHeader(indexHeader, strconv.Itoa(s.index)))
		if err != nil {
			return "", err
		}
		msg = *got
	}
	if msg.StopReason == "" {
		return "", errors.New("the message has no stop reason")
	}
	var text string
	for _, b := range msg.Content {
		text += b.Text
	}
	return text, nil
}
