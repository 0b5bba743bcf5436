package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// disconnectPolicy serves paced-gpt from one fake, at paced, whose streams pause
// after their first event; every key draws on its own bucket of a budget,
// so what each request held can be watched being given back.
func disconnectPolicy(paced string, names []string) fixture {
	return func(policy) testkit.Policy {
		return pacedPolicy(paced, "paced-gpt", "20s", "leaving", dayBudget("leave", 100000), caseKeys("leaving", names...)...)
	}
}

// closeWatch tells when the gateway closes an upstream request the fake
// is still serving: the request's context ends before its handler does.
type closeWatch struct{ closed chan time.Time }

func (c *closeWatch) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served := make(chan struct{})
		go func() {
			select {
			case <-r.Context().Done():
				c.closed <- time.Now()
			case <-served:
			}
		}()
		h.ServeHTTP(w, r)
		close(served)
	})
}

// TestClientLeaves: a client that goes away, mid-stream, before a stream's
// first byte, or while a non-streamed answer is still being thought about
// upstream, is logged and counted as 499; the upstream request is closed
// at once (the fake sees its connection end while it is still serving),
// and what the request held of its budget is settled on what the upstream
// had answered, or given back when it had answered nothing.
func TestClientLeaves(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	pause := fakeprovider.NewPause()
	watch := &closeWatch{closed: make(chan time.Time, 4)}
	fake, url := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, func(h http.Handler) http.Handler {
		return watch.wrap(pause.Wrap(h))
	})
	cases := []struct {
		name   string
		stream bool
		// delay holds the fake's answer back before its first byte.
		delay time.Duration
		// settled: the bucket ends with the hold spent (the upstream had
		// begun answering), else with nothing spent.
		settled bool
	}{
		{name: "mid-stream", stream: true, settled: true},
		{name: "before-first-byte", stream: true, delay: 20 * time.Second},
		{name: "upstream-thinking", delay: 20 * time.Second},
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	e := startWith(t, disconnectPolicy(url, names))
	t.Cleanup(pause.Release)
	client := &http.Client{}
	defer client.CloseIdleConnections()

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.setFaults(fake, fakeprovider.Faults{FirstByteDelay: c.delay})
			const maxTokens = 500
			body := fmt.Sprintf(`{"model":"paced-gpt","stream":%v,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, c.stream, maxTokens, prompt)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.baseURL()+"chat/completions", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			id := "req-leaves-" + c.name
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-e2e-"+c.name)
			req.Header.Set("X-Request-Id", id)
			answered := make(chan error, 1)
			if c.delay == 0 { // read up to the first event; the body stays open until the client leaves
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("the stream did not begin: %v", err)
				}
				defer resp.Body.Close()
				lines := bufio.NewScanner(resp.Body)
				for lines.Scan() && !strings.HasPrefix(lines.Text(), "data: ") {
				}
			} else {
				go func() {
					resp, err := client.Do(req)
					if err == nil {
						resp.Body.Close()
					}
					answered <- err
				}()
				budgetWait(t, "the upstream to receive the request", func() bool { return fake.Calls() == int64(i+1) })
			}
			held, ok := e.budgetRow("leave", c.name)
			if !ok || held.Held == 0 {
				t.Fatalf("nothing held while the request is in flight: %+v", held)
			}
			left := time.Now()
			cancel()
			select {
			case at := <-watch.closed:
				if d := at.Sub(left); d > time.Second {
					t.Errorf("the upstream request was closed %v after the client left", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was never closed")
			}
			if c.delay != 0 {
				if err := <-answered; err == nil {
					t.Error("the client that left got an answer")
				}
			}
			want := uint64(0) // given back: the upstream had answered nothing
			if c.settled {
				want = held.Held // the stream had shown no usage yet: settled at the hold
			}
			if row := e.settledRow("leave", c.name); row.Spent != want {
				t.Errorf("bucket %+v after the client left, want spent %d", row, want)
			}
			line := e.requestLine(id)
			if line["status"] != 499.0 || line["level"] != "INFO" || strings.Contains(fmt.Sprint(line["error"]), "upstream") {
				t.Errorf("logged as %v, want status 499 at INFO, no upstream blamed", line)
			}
		})
	}
	if n := e.counter("pistra_requests_total", map[string]string{"route": "chat_completions", "code": "499"}); n != float64(len(cases)) {
		t.Errorf("pistra_requests_total{code=499} = %v, want %d", n, len(cases))
	}
	if n := e.counter("pistra_requests_total", map[string]string{"code": "200"}); n != 0 {
		t.Errorf("pistra_requests_total{code=200} = %v: a client that left was counted as served", n)
	}
}
