package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// TestOpenStreamsHoldLittleStack: with many streams open at once, waiting
// on their upstream between events, each costs the daemon two goroutines
// (the connection's and net/http's read-ahead) and about 10 KiB of stack:
// the handler's goroutine stays within 8 KiB. Goroutines start at the
// runtime's smallest stack here, so a handler path that needs 16 KiB
// shows as 18 KiB per stream.
func TestOpenStreamsHoldLittleStack(t *testing.T) {
	const streams = 100
	bin := buildPistrad(t)
	e := &env{t: t}
	var openaiURL string
	e.openai, openaiURL = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	e.bundlePath = filepath.Join(t.TempDir(), "bundle.json")
	e.writeBundle(policy{OpenAI: openaiURL, Backup: openaiURL, Anthropic: openaiURL, Dead: "http://" + closedPort(t) + "/v1"})
	// Two Ps bound the threads the runtime starts while the streams open;
	// their own stacks are taken out below.
	daemonEnv := []string{"PISTRA_ADMIN_TOKEN=t", "GODEBUG=adaptivestackstart=0", "GOMAXPROCS=2"}
	for k, v := range upstreamEnv {
		daemonEnv = append(daemonEnv, k+"="+v)
	}
	d := startDaemon(t, bin, daemonEnv, "-bundle", e.bundlePath)
	t.Cleanup(func() { d.stop(t, syscall.SIGTERM) })
	client := sdkclient.OpenAI("http://"+d.public+"/v1/", keyDefault)
	// A quick stream first, so what the first request sets up once (pools,
	// caches, the ledger's first flush) is in the idle figures.
	if s := client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast")); !drained(s) {
		t.Fatalf("warm-up stream: %v", s.Err())
	}
	idle := scrapeStacks(t, d)
	e.setFaults(e.openai, fakeprovider.Faults{ChunkDelay: 300 * time.Millisecond})
	ss := make([]*ssestream.Stream[openai.ChatCompletionChunk], streams)
	started := make([]bool, streams)
	var wg sync.WaitGroup
	for i := range ss {
		wg.Go(func() {
			ss[i] = client.Chat.Completions.NewStreaming(context.Background(), chatParams("fast"))
			started[i] = ss[i].Next()
		})
	}
	wg.Wait()
	for i, ok := range started {
		if !ok {
			t.Fatalf("stream %d did not start: %v", i, ss[i].Err())
		}
	}
	open := scrapeStacks(t, d) // every stream open, waiting on its next event
	for i, s := range ss {
		if !drained(s) {
			t.Fatalf("stream %d: %v", i, s.Err())
		}
	}
	// A thread the runtime started meanwhile brings two stacks of its own
	// (16 KiB to schedule on, 32 KiB for signals), counted with the
	// goroutines' in stack_inuse.
	threadStacks := (open.threads - idle.threads) * 48 * 1024
	perStream := (open.stack - idle.stack - threadStacks) / streams / 1024
	goroutines := (open.goroutines - idle.goroutines) / streams
	t.Logf("per open stream: %.1f KiB of stack, %.2f goroutines (%+.0f threads)", perStream, goroutines, open.threads-idle.threads)
	if goroutines > 2.2 {
		t.Errorf("%.2f goroutines per open stream, want 2", goroutines)
	}
	if perStream > 13 {
		t.Errorf("%.1f KiB of stack per open stream, want about 10 (a handler goroutine of 8 KiB)", perStream)
	}
}

// drained reads s to its end and reports whether it ended cleanly.
func drained(s *ssestream.Stream[openai.ChatCompletionChunk]) bool {
	for s.Next() {
	}
	return s.Err() == nil
}

// stacks is what the daemon says of its stacks: the bytes in use, its
// goroutines and its threads.
type stacks struct{ stack, goroutines, threads float64 }

func scrapeStacks(t *testing.T, d *daemon) stacks {
	t.Helper()
	resp, err := http.Get("http://" + d.public + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams := testkit.Scrape(t, resp.Body)
	gauge := func(name string) float64 { return testkit.Series(t, fams, name, nil).GetGauge().GetValue() }
	return stacks{gauge("go_memstats_stack_inuse_bytes"), gauge("go_goroutines"), gauge("go_threads")}
}
