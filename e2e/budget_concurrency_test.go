package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

const keyStreamer = "sk-e2e-streamer"

// budgetStreamsPolicy serves one OpenAI fake, reached through a Pause at
// paused, to a key whose profile draws on one budget of limit tokens a
// day.
func budgetStreamsPolicy(paused string, limit uint64) fixture {
	return func(policy) testkit.Policy {
		return pacedPolicy(paused, "gpt-4o-mini", "30s", "capped", dayBudget("streams", limit), clientKey("streamer", "capped", keyStreamer))
	}
}

// streamBody is what every stream sends: the same bytes, so every hold is
// the same. The client asks for usage itself, so the usage chunk reaches
// it and the test knows what the provider reported.
var streamBody = []byte(`{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":1000,` +
	`"messages":[{"role":"user","content":"` + prompt + `"}]}`)

// streamHold is what the gateway holds for streamBody: body bytes over
// four in, its max_tokens out.
var streamHold = uint64(len(streamBody)/4 + 1000)

// streamOutcome is what one client saw.
type streamOutcome struct {
	status  int
	code    string // the refusal's code
	text    string
	finish  string
	done    bool   // data: [DONE] arrived
	total   uint64 // usage.total_tokens of the usage chunk
	reports int    // chunks that carried usage
	err     error
}

type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		TotalTokens uint64 `json:"total_tokens"`
	} `json:"usage"`
}

// runStream sends streamBody and reads the answer to its end; began is
// told once: streaming when the first chunk is in, not when the answer is
// anything else.
func runStream(client *http.Client, url string, began func(streaming bool)) (o streamOutcome) {
	defer func() {
		if began != nil {
			began(false)
		}
	}()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(streamBody))
	if err != nil {
		return streamOutcome{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+keyStreamer)
	resp, err := client.Do(req)
	if err != nil {
		return streamOutcome{err: err}
	}
	defer resp.Body.Close()
	o.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		var refusal budgetRefusal
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &refusal); err != nil {
			o.err = fmt.Errorf("%s: %s", resp.Status, b)
		}
		o.code = refusal.Error.Code
		return o
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			o.done = true
			continue
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			o.err = fmt.Errorf("chunk %q: %w", data, err)
			return o
		}
		for _, ch := range c.Choices {
			o.text += ch.Delta.Content
			if ch.FinishReason != nil {
				o.finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			o.total = c.Usage.TotalTokens
			o.reports++
		}
		if began != nil {
			began(true)
			began = nil
		}
	}
	o.err = lines.Err()
	return o
}

// TestBudgetConcurrentStreams: 50 long streams arrive together at a budget
// whose limit holds 15 of them. The fake holds every stream it serves
// after its first event until the test lets go, so no admitted stream can
// settle and give room back while the others arrive: exactly 15 are
// served, 35 refused with 429 budget_exceeded without reaching the
// provider, and the bucket holds 15 holds. While the streams then run,
// spent+held never exceeds the limit; once they end, spent is the usage
// the provider reported, nothing is held, and a small request still fits.
func TestBudgetConcurrentStreams(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	const streams, fit = 50, 15
	limit := fit*streamHold + streamHold/2

	pause := fakeprovider.NewPause()
	fake, url := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, pause.Wrap)
	// Events 40 ms apart: once released, the streams run for about half a
	// second, while the sampler reads the bucket.
	if err := fake.SetFaults(fakeprovider.Faults{ChunkDelay: 40 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	e := startWith(t, budgetStreamsPolicy(url, limit))
	// Registered last, so it runs first: a stream left paused by a failure
	// would hold up the gateway's shutdown and the fake's close.
	t.Cleanup(pause.Release)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	defer client.CloseIdleConnections()
	chatURL := "http://" + e.srv.PublicAddr() + "/v1/chat/completions"

	outcomes := make([]streamOutcome, streams)
	var wg sync.WaitGroup
	var began sync.WaitGroup
	var streaming atomic.Int64
	began.Add(streams)
	start := make(chan struct{})
	for i := range streams {
		wg.Go(func() {
			<-start
			outcomes[i] = runStream(client, chatURL, func(ok bool) {
				if ok {
					streaming.Add(1)
				}
				began.Done()
			})
		})
	}
	close(start)
	if !waitGroupWithin(&began, 30*time.Second) {
		t.Fatal("the streams were neither refused nor begun within 30s")
	}

	// Every request has its answer or its first chunk; the admitted ones
	// are all paused upstream, so the bucket holds exactly their holds.
	admitted := int(streaming.Load())
	budgetWait(t, "the fake to hold every stream that began", func() bool { return pause.Held() == admitted })
	if admitted != fit {
		t.Errorf("%d streams admitted together, want %d: the limit %d holds %d holds of %d", admitted, fit, limit, fit, streamHold)
	}
	if got := fake.Calls(); got != int64(admitted) {
		t.Errorf("the provider was called %d times for %d admitted streams: a refused stream reached it", got, admitted)
	}
	row, ok := e.budgetRow("streams", "streamer")
	if !ok || row.Limit != limit || row.Spent != 0 || row.Held != uint64(admitted)*streamHold {
		t.Errorf("bucket while %d streams are paused: %+v (found %v), want limit %d, spent 0, held %d",
			admitted, row, ok, limit, uint64(admitted)*streamHold)
	}

	// Sample the bucket while the streams run, until they are all over.
	stop := make(chan struct{})
	samples := make(chan []bucketRow, 1)
	go func() { samples <- sampleBucket(e.srv.AdminAddr(), "streams", "streamer", stop) }()
	pause.Release()
	if !waitGroupWithin(&wg, 30*time.Second) {
		t.Fatal("the streams did not end within 30s of their release")
	}
	close(stop)
	seen := <-samples

	var served, refused int
	var reported, overrun uint64
	for i, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("stream %d: %v", i, o.err)
		case o.status == http.StatusTooManyRequests && o.code == "budget_exceeded":
			refused++
		case o.status != http.StatusOK:
			t.Errorf("stream %d: %d %q, want 200 or 429 budget_exceeded", i, o.status, o.code)
		case !o.done || o.finish != "stop" || o.text != fakeprovider.ReplyText(prompt) || o.reports != 1:
			t.Errorf("stream %d served incomplete: done %v, finish %q, text %q, %d usage chunks", i, o.done, o.finish, o.text, o.reports)
		default:
			served++
			reported += o.total
			if o.total > streamHold {
				overrun += o.total - streamHold
			}
		}
	}
	if served != admitted || refused != streams-admitted {
		t.Errorf("%d served and %d refused of %d, want %d and %d", served, refused, streams, admitted, streams-admitted)
	}

	t.Logf("%d served, %d refused; %d samples of the bucket while they ran", served, refused, len(seen))
	if len(seen) == 0 {
		t.Error("the bucket was never sampled while the streams ran")
	}
	over := 0
	for _, s := range seen {
		if s.Spent+s.Held > s.Limit {
			if over == 0 {
				t.Errorf("sampled spent %d + held %d over the limit %d", s.Spent, s.Held, s.Limit)
			}
			over++
		}
	}
	if over > 1 {
		t.Errorf("%d of %d samples over the limit", over, len(seen))
	}

	// Settlement replaces each hold with what the provider reported, and a
	// provider may report more than the hold expected (a prompt that
	// tokenizes to more than its bytes over four): only that excess can
	// take spend past the limit, and only for streams admitted together.
	// So final spend is the reported usage exactly, and at most the limit
	// plus the sum of those excesses (zero for this fake, whose counts are
	// below the hold).
	final := e.settledRow("streams", "streamer")
	if final.Spent != reported {
		t.Errorf("spent %d after the streams, want the %d tokens their usage chunks reported", final.Spent, reported)
	}
	if final.Spent > limit+overrun {
		t.Errorf("spent %d, over the limit %d by more than the %d the provider reported past the holds", final.Spent, limit, overrun)
	}

	skipped := e.budgetCounter("pistra_failover_skipped_total", map[string]string{"provider": "paced-openai", "reason": "budget_exceeded"})
	failures := e.budgetCounter("pistra_auth_failures_total", map[string]string{"reason": "budget_exceeded"})
	if skipped != float64(refused) || failures != float64(refused) {
		t.Errorf("skipped %v, auth failures %v: want both %d", skipped, failures, refused)
	}
	// The gauges are republished on the next flush.
	want := float64(final.Spent) / float64(limit)
	budgetWait(t, "pistra_budget_used_ratio to show the settled spend", func() bool {
		return e.budgetGauge("pistra_budget_used_ratio", map[string]string{"budget": "streams"}) == want
	})
	if under, over := e.budgetGauge("pistra_budget_buckets", map[string]string{"budget": "streams", "state": "under"}),
		e.budgetGauge("pistra_budget_buckets", map[string]string{"budget": "streams", "state": "over"}); under != 1 || over != 0 {
		t.Errorf("buckets under %v over %v, want 1 and 0", under, over)
	}

	// The room the streams gave back is there: a small request fits.
	small := []byte(`{"model":"gpt-4o-mini","max_tokens":16,"messages":[{"role":"user","content":"` + prompt + `"}]}`)
	resp := e.budgetPost(client, "/v1/chat/completions", keyStreamer, small)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a small request after the streams: %s %s", resp.Status, b)
	}
}

// sampleBucket reads the bucket every few milliseconds until stop is
// closed, at most 2000 times, and returns what it read.
func sampleBucket(admin, budget, name string, stop <-chan struct{}) []bucketRow {
	var out []bucketRow
	for range 2000 {
		select {
		case <-stop:
			return out
		default:
		}
		if r, err := fetchBudgets(admin); err == nil {
			if b, ok := r.find(budget, name); ok {
				out = append(out, b)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

// waitGroupWithin waits for wg, and reports false if it is not done
// within d.
func waitGroupWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
