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

// target is one way of reaching the fake: directly, through pistrad, or
// through the reverse proxy.
type target struct {
	name   string
	url    string // chat completions URL
	model  string
	key    string
	pid    int // gateway process to charge CPU to; 0 for direct
	client *http.Client
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
	cpu0 := gatewayCPU(t.pid)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			var lat, ttfb []time.Duration
			errs, firstErr := 0, error(nil)
			for time.Now().Before(deadline) {
				l, tf, err := one(t, body, stream, want)
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
	s.cpu = gatewayCPU(t.pid) - cpu0
	s.requests = len(s.lat)
	slices.Sort(s.lat)
	slices.Sort(s.ttfb)
	return s
}

func gatewayCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	d, err := proc.CPUTime(pid)
	if err != nil {
		return 0
	}
	return d
}

func requestBody(model string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":    model,
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	})
	return b
}

// one sends a request and checks the answer is whole and right.
func one(t *target, body []byte, stream bool, want string) (lat, ttfb time.Duration, err error) {
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
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, 0, fmt.Errorf("%s: status %d", t.name, resp.StatusCode)
	}
	var got string
	if stream {
		got, ttfb, err = readStream(resp.Body, start)
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
func readStream(r io.Reader, start time.Time) (string, time.Duration, error) {
	br := bufio.NewReader(r)
	if _, err := br.Peek(1); err != nil {
		return "", 0, fmt.Errorf("empty stream: %w", err)
	}
	ttfb := time.Since(start)
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
