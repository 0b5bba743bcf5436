package fakeprovider_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPause: streams stop after their first event until Release, then run
// to their end; a plain answer is not held; a paused stream whose client
// leaves is let go.
func TestPause(t *testing.T) {
	s, err := fakeprovider.New(fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	pause := fakeprovider.NewPause()
	hs := httptest.NewServer(pause.Wrap(s))
	t.Cleanup(hs.Close)
	t.Cleanup(pause.Release)
	client := sdkclient.OpenAI(hs.URL+"/v1", testKey)

	type result struct {
		text string
		err  error
	}
	const streams = 3
	firsts, results := make(chan struct{}, streams), make(chan result, streams)
	for range streams {
		go func() {
			stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(question))
			var acc openai.ChatCompletionAccumulator
			for n := 0; stream.Next(); n++ {
				if n == 0 {
					firsts <- struct{}{}
				}
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				results <- result{err: err}
				return
			}
			results <- result{text: acc.Choices[0].Message.Content}
		}()
	}
	for range streams {
		select {
		case <-firsts:
		case <-time.After(5 * time.Second):
			t.Fatal("a paused stream did not send its first event")
		}
	}
	waitFor(t, "every stream to be held", func() bool { return pause.Held() == streams })
	select {
	case r := <-results:
		t.Fatalf("a stream ended before Release: %+v", r)
	default:
	}

	got, err := client.Chat.Completions.New(context.Background(), chatParams(question))
	if err != nil || got.Choices[0].Message.Content != fakeprovider.ReplyText(question) {
		t.Fatalf("a plain answer was held or changed: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	left := client.Chat.Completions.NewStreaming(ctx, chatParams(question))
	if !left.Next() {
		t.Fatalf("no first event: %v", left.Err())
	}
	waitFor(t, "the fourth stream to be held", func() bool { return pause.Held() == streams+1 })
	cancel()
	waitFor(t, "the abandoned stream to be let go", func() bool { return pause.Held() == streams })
	left.Close()

	pause.Release()
	for range streams {
		select {
		case r := <-results:
			if r.err != nil || r.text != fakeprovider.ReplyText(question) {
				t.Errorf("released stream: %q, %v", r.text, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a released stream did not end")
		}
	}
	if pause.Held() != 0 {
		t.Errorf("%d streams still held after Release", pause.Held())
	}
}
