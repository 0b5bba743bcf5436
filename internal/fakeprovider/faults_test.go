package fakeprovider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

func TestFailFirstCallsOpenAI(t *testing.T) {
	s, client := startOpenAI(t)
	if err := s.SetFaults(fakeprovider.Faults{FailStatus: 429, FailCount: 2, RetryAfter: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	_, err := client.Chat.Completions.New(context.Background(), chatParams(question))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("first call: %v, want a 429 rate_limit_exceeded", err)
	}
	if h := apiErr.Response.Header; h.Get("retry-after") != "1" || h.Get("retry-after-ms") != "1" {
		t.Errorf("retry-after %q, retry-after-ms %q: want 1 and 1", h.Get("retry-after"), h.Get("retry-after-ms"))
	}
	// The SDK's own retry meets the second failure, then the success.
	resp, err := client.Chat.Completions.New(context.Background(), chatParams(question), option.WithMaxRetries(2))
	if err != nil || resp.Choices[0].Message.Content == "" {
		t.Fatalf("after the failures: %v", err)
	}
	if s.Calls() != 3 {
		t.Errorf("calls %d, want 3", s.Calls())
	}
}

func TestFailFirstCallsAnthropic(t *testing.T) {
	s, client, _ := startAnthropic(t)
	if err := s.SetFaults(fakeprovider.Faults{FailStatus: 529, FailCount: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := client.Messages.New(context.Background(), messageParams(question))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Type() != "overloaded_error" || apiErr.RequestID == "" {
		t.Fatalf("first call: %v, want a 529 overloaded_error", err)
	}
	if _, err := client.Messages.New(context.Background(), messageParams(question)); err != nil {
		t.Fatalf("second call: %v", err)
	}
}

func TestCutMidStream(t *testing.T) {
	cut := fakeprovider.Faults{CutAfter: 3}
	// Chat streams, from OpenAI and from Anthropic's OpenAI-compatible layer.
	for _, srv := range chatServers {
		t.Run(string(srv.dialect)+" chat", func(t *testing.T) {
			_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: srv.dialect, Key: testKey, Faults: cut})
			client := sdkclient.OpenAI(base, testKey)
			stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(question))
			chunks := 0
			for stream.Next() {
				chunks++
			}
			if stream.Err() == nil || chunks > 3 {
				t.Errorf("got %d chunks and error %v: want the stream to fail after at most 3", chunks, stream.Err())
			}
		})
	}
	t.Run("anthropic", func(t *testing.T) {
		s, client, _ := startAnthropic(t)
		if err := s.SetFaults(cut); err != nil {
			t.Fatal(err)
		}
		stream := client.Messages.NewStreaming(context.Background(), messageParams(question))
		var msg anthropic.Message
		for stream.Next() {
			_ = msg.Accumulate(stream.Current())
		}
		if stream.Err() == nil || msg.StopReason != "" {
			t.Errorf("error %v, stop reason %q: want a failed stream that never finished", stream.Err(), msg.StopReason)
		}
	})
}

func TestDelays(t *testing.T) {
	s, client := startOpenAI(t)
	f := fakeprovider.Faults{FirstByteDelay: 20 * time.Millisecond, ChunkDelay: time.Millisecond}
	if err := s.SetFaults(f); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(question))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	// A lower bound only: the delays are waited, whatever the machine's speed.
	if elapsed := time.Since(start); elapsed < f.FirstByteDelay {
		t.Errorf("stream took %v, less than the first-byte delay", elapsed)
	}
	if acc.Choices[0].Message.Content != fakeprovider.ReplyText(question) {
		t.Errorf("delayed stream delivered %q", acc.Choices[0].Message.Content)
	}
}

func TestControlEndpoint(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic})
	origin := strings.TrimSuffix(base, "/v1")
	post := func(path, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(origin+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := post("/_fake/faults", `{"fail_status":503,"fail_count":1,"first_byte_delay":"1ms"}`); resp.StatusCode != 200 {
		t.Fatalf("set faults: status %d", resp.StatusCode)
	}
	if f := s.Faults(); f.FailStatus != 503 || f.FailCount != 1 || f.FirstByteDelay != time.Millisecond {
		t.Fatalf("faults %+v after POST", f)
	}
	if resp := post("/_fake/faults", `{"chunk_delay":"soon"}`); resp.StatusCode != 400 {
		t.Errorf("bad duration: status %d, want 400", resp.StatusCode)
	}
	client := sdkclient.Anthropic(base, "sk-ant-client-key-1234")
	_, err := client.Messages.New(context.Background(), messageParams(question))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type() != "api_error" {
		t.Fatalf("faulted call: %v, want 503 api_error", err)
	}

	resp, err := http.Get(origin + "/_fake/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var recs []struct {
		Path, Model string
		Header      http.Header
	}
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil || len(recs) != 1 {
		t.Fatalf("recorded %+v (%v), want the one call", recs, err)
	}
	if recs[0].Path != "/v1/messages" || recs[0].Model != "claude-haiku-4-5" || recs[0].Header.Get("Anthropic-Version") == "" {
		t.Errorf("recorded %+v", recs[0])
	}
	if auth := recs[0].Header.Get("Authorization"); auth != "…1234" {
		t.Errorf("control endpoint shows Authorization %q, want it masked to its last four characters", auth)
	}
	if resp := post("/_fake/reset", ""); resp.StatusCode != 204 || s.Calls() != 0 || len(s.Requests()) != 0 {
		t.Errorf("reset: status %d, %d calls and %d records left", resp.StatusCode, s.Calls(), len(s.Requests()))
	}
}

func TestRecordingIsBounded(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, RecordLimit: 3})
	client := sdkclient.OpenAI(base, "sk-client", option.WithHeader("X-Trace", "abc"))
	for _, model := range []string{"m1", "m2", "m3", "m4", "m5"} {
		p := chatParams(question)
		p.Model = model
		if _, err := client.Chat.Completions.New(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	recs := s.Requests()
	var models []string
	for _, r := range recs {
		models = append(models, r.Model)
		if r.Method != "POST" || r.Header.Get("Authorization") != "Bearer sk-client" || r.Header.Get("X-Trace") != "abc" ||
			!bytes.Contains(r.Body, []byte(question)) || r.BodySize != len(r.Body) {
			t.Errorf("record %+v does not show the call as sent", r)
		}
	}
	if strings.Join(models, ",") != "m3,m4,m5" || s.Calls() != 5 {
		t.Errorf("kept %v of %d calls, want the last three in order", models, s.Calls())
	}
}

// TestConcurrentClients runs 64 streaming clients per dialect at once; the
// race detector and the content checks catch shared state.
func TestConcurrentClients(t *testing.T) {
	oai, oaiClient := startOpenAI(t)
	ant, antClient, _ := startAnthropic(t)
	const clients = 64
	var wg sync.WaitGroup
	errs := make(chan error, 2*clients)
	for i := range clients {
		content := strings.Repeat("word ", i%7) + "client"
		wg.Go(func() {
			stream := oaiClient.Chat.Completions.NewStreaming(context.Background(), chatParams(content))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != fakeprovider.ReplyText(content) {
				errs <- errors.Join(errors.New("openai stream: "+acc.Choices[0].Message.Content), err)
			}
		})
		wg.Go(func() {
			stream := antClient.Messages.NewStreaming(context.Background(), messageParams(content), aoption.WithMaxRetries(0))
			var msg anthropic.Message
			for stream.Next() {
				_ = msg.Accumulate(stream.Current())
			}
			if err := stream.Err(); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != fakeprovider.ReplyText(content) {
				errs <- errors.Join(errors.New("anthropic stream: wrong content"), err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if oai.Calls() != clients || ant.Calls() != clients {
		t.Errorf("calls %d and %d, want %d each", oai.Calls(), ant.Calls(), clients)
	}
}
