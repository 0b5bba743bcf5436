package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
	"github.com/pistra/pistra/internal/fakeprovider"
)

const prompt = "Measure the gateway on this short prompt"

// target is one way of reaching the fake: directly or through a gateway.
type target struct {
	name   string
	url    string // chat completions URL
	model  string
	key    string
	pid    int // gateway process (and its children) to charge CPU to; 0 for direct
	client *http.Client
	// stats is where a Go gateway's go_goroutines and
	// go_memstats_mallocs_total are read; "" when it has none.
	stats string
	admin string // pistrad's admin listener, for profiles; "" otherwise
}

// sample is what one measured window produced.
type sample struct {
	requests int
	errors   int
	firstErr error
	elapsed  time.Duration
	lat      []time.Duration // whole request
	ttfb     []time.Duration // streams: first body byte
	cpu      time.Duration   // gateway user+system time over the window
	user     time.Duration   // the user part of cpu
	syscalls int64           // gateway read and write system calls over the window
	allocs   float64         // gateway heap allocations over the window; -1 unknown
}

func newClient(conc int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conc,
		DisableCompression:  true,
	}}
}

// run drives t with conc workers for d and validates every response.
func run(t *target, stream bool, conc int, d time.Duration) sample {
	body := requestBody(t.model, stream)
	want := fakeprovider.ReplyText(prompt)
	var mu sync.Mutex
	var s sample
	mallocs0 := mallocs(t)
	cpu0, sys0 := gatewayCPU(t.pid), gatewaySyscalls(t.pid)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			var lat, ttfb []time.Duration
			errs, firstErr := 0, error(nil)
			for time.Now().Before(deadline) {
				l, tf, err := one(t, body, stream, want, nil)
				if err != nil {
					errs++
					firstErr = err
					continue
				}
				lat = append(lat, l)
				if stream {
					ttfb = append(ttfb, tf)
				}
			}
			mu.Lock()
			s.lat, s.ttfb = append(s.lat, lat...), append(s.ttfb, ttfb...)
			s.errors += errs
			if firstErr != nil {
				s.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	s.elapsed = time.Since(start)
	cpu1 := gatewayCPU(t.pid)
	s.cpu, s.user = cpu1.Total()-cpu0.Total(), cpu1.User-cpu0.User
	s.syscalls = gatewaySyscalls(t.pid) - sys0
	s.allocs = -1
	if m0, m1 := mallocs0, mallocs(t); m0 >= 0 && m1 >= 0 {
		s.allocs = m1 - m0
	}
	s.requests = len(s.lat)
	slices.Sort(s.lat)
	slices.Sort(s.ttfb)
	return s
}

// gatewayCPU is the CPU time of a gateway's process tree (pid 0: none),
// zero when it cannot be read.
func gatewayCPU(pid int) proc.CPU {
	if pid == 0 {
		return proc.CPU{}
	}
	c, err := proc.TreeCPU(pid)
	if err != nil {
		return proc.CPU{}
	}
	return c
}

func gatewaySyscalls(pid int) int64 {
	if pid == 0 {
		return 0
	}
	n, err := proc.TreeSyscalls(pid)
	if err != nil {
		return 0
	}
	return n
}

// mallocs is the gateway's allocation count so far, or -1 when it does not
// say. The scrape itself allocates in the gateway: a few thousand
// allocations per cell, against the cell's thousands of requests.
func mallocs(t *target) float64 {
	return gauge(t, "go_memstats_mallocs_total")
}

func gauge(t *target, name string) float64 {
	if t.stats == "" {
		return -1
	}
	text, err := proc.Scrape(t.stats, "")
	if err != nil {
		return -1
	}
	v, ok := proc.SumSeries(text, name)
	if !ok {
		return -1
	}
	return v
}

func requestBody(model string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	return b
}

// one sends a request and checks the answer is whole and right; a stream
// calls first, when not nil, as its first byte arrives.
func one(t *target, body []byte, stream bool, want string, first func()) (lat, ttfb time.Duration, err error) {
	req, err := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Read to its end before the close, or the client drops the
	// connection whenever an answer's last bytes (a chunked body's end)
	// come after the JSON or the [DONE] it stops at, and the gateway pays
	// for a new connection on the next request.
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, 0, fmt.Errorf("%s: status %d", t.name, resp.StatusCode)
	}
	var got string
	if stream {
		got, ttfb, err = readStream(resp.Body, start, first)
	} else {
		got, err = readJSON(resp.Body)
	}
	lat = time.Since(start)
	if err == nil && got != want {
		err = fmt.Errorf("%s: got %q, want %q", t.name, got, want)
	}
	return lat, ttfb, err
}

func readJSON(r io.Reader) (string, error) {
	var c struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return "", err
	}
	if len(c.Choices) != 1 {
		return "", fmt.Errorf("%d choices", len(c.Choices))
	}
	return c.Choices[0].Message.Content, nil
}

// readStream reassembles a chat stream; it must end with [DONE].
func readStream(r io.Reader, start time.Time, first func()) (string, time.Duration, error) {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err != nil {
		return "", 0, fmt.Errorf("empty stream: %w", err)
	}
	ttfb := time.Since(start)
	if first != nil {
		first()
	}
	var text bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return "", 0, fmt.Errorf("stream ended without [DONE]: %w", err)
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			return text.String(), ttfb, nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return "", 0, fmt.Errorf("bad chunk %q: %w", data, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
