package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pistra/pistra/bench/internal/proc"
)

// gateway state at one moment.
type snapshot struct {
	goroutines int
	rss        int64
}

// measure reads pistrad's goroutines and RSS with no client connection
// open to it, so the count is what pistrad keeps when idle.
func (r *rig) measure(t *http.Transport) (snapshot, error) {
	t.CloseIdleConnections()
	n, err := r.goroutines()
	if err != nil {
		return snapshot{}, err
	}
	rss, err := proc.RSS(r.pistrad.Cmd.Process.Pid)
	return snapshot{goroutines: n, rss: rss}, err
}

// settle waits, up to cfg.settle, for pistrad's goroutines to come back
// within cfg.slack of baseline, and reports where they ended.
func (r *rig) settle(t *http.Transport, baseline int) (snapshot, bool, error) {
	deadline := time.Now().Add(r.cfg.settle)
	for {
		s, err := r.measure(t)
		if err != nil || s.goroutines <= baseline+r.cfg.slack {
			return s, err == nil, err
		}
		if time.Now().After(deadline) {
			return s, false, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrape fetches pistrad's /metrics, on a connection of its own that is
// closed after, so the scrape leaves no goroutine behind.
func (r *rig) scrape() (string, error) { return proc.Scrape(r.public+"/metrics", "") }

func (r *rig) goroutines() (int, error) {
	m, err := r.scrape()
	if err != nil {
		return 0, err
	}
	v, ok := proc.SumSeries(m, "go_goroutines")
	if !ok {
		return 0, errors.New("pistrad's /metrics has no go_goroutines")
	}
	return int(v), nil
}

// goroutineDump is pistrad's goroutine profile, for a run that leaked.
func (r *rig) goroutineDump() string {
	var b []byte
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, r.admin+"/debug/pprof/goroutine?debug=1", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	if resp, err := c.Do(req); err == nil {
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	return string(b)
}

// heldBudget sums what the budget buckets still hold: every request has
// settled or released its hold once the run is over, so it must be zero.
func (r *rig) heldBudget() (uint64, error) {
	var rep struct {
		Buckets []struct {
			Held uint64 `json:"held"`
		} `json:"buckets"`
	}
	if err := getJSON(r.admin+"/admin/v1/budgets", adminToken, &rep); err != nil {
		return 0, fmt.Errorf("budgets: %w", err)
	}
	var held uint64
	for _, b := range rep.Buckets {
		held += b.Held
	}
	return held, nil
}
