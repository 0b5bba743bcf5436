package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// loadSessions and loadTurns size TestSessionsHeldOpen: sessions held open
// at once, and responses asked on each (each is one client frame and four
// upstream ones).
const (
	loadSessions = 200
	loadTurns    = 10
)

// TestSessionsHeldOpen holds loadSessions Realtime sessions open at once
// through pistrad and through a lean relay (the same WebSocket library,
// copying messages both ways and nothing else) in the same run, and logs
// the heap each open session costs and the CPU each relayed frame costs on
// both. Everything runs in this process (clients and fake too, alike on
// both paths), so the difference between the two is the gateway's.
func TestSessionsHeldOpen(t *testing.T) {
	r := startSessions(t, 1<<40)
	direct := strings.Replace(r.policy.OpenAI, "http", "ws", 1) + "/realtime"
	lean := leanRelay(t, direct)
	gw := runLoad(t, "ws://"+r.srv.PublicAddr()+"/v1/realtime", keySession)
	reported := r.openai.SessionUsage().Total
	budgetWait(t, "every session to be settled on its usage", func() bool {
		row, ok := r.budgetRow("voice-day", "voice-key")
		return ok && row.Held == 0 && row.Spent == reported+loadSessions
	})
	base := runLoad(t, lean, "")
	t.Logf("pistrad:    %6.1f KiB heap per open session, %6.1f µs CPU per relayed frame, %d goroutines per session",
		gw.heapPerSession/1024, gw.cpuPerFrame.Seconds()*1e6, gw.goroutines)
	t.Logf("lean relay: %6.1f KiB heap per open session, %6.1f µs CPU per relayed frame, %d goroutines per session",
		base.heapPerSession/1024, base.cpuPerFrame.Seconds()*1e6, base.goroutines)
	if n := r.openai.SessionsOpened(); n != 2*loadSessions {
		t.Errorf("the fake served %d sessions; want %d", n, 2*loadSessions)
	}
}

// loadFigures is one path's cost.
type loadFigures struct {
	heapPerSession float64
	cpuPerFrame    time.Duration
	goroutines     int
}

// runLoad opens loadSessions sessions at url, measures the heap with all
// of them open, then runs loadTurns responses on each and measures the
// CPU taken per relayed frame.
func runLoad(t *testing.T, url, key string) loadFigures {
	t.Helper()
	heap0, g0 := heapInUse(), runtime.NumGoroutine()
	conns := make([]*websocket.Conn, loadSessions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	for i := range conns {
		c, _, err := websocket.Dial(ctx, url+"?model="+rtModel, &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if _, _, err := c.Read(ctx); err != nil { // session.created
			t.Fatal(err)
		}
		conns[i] = c
	}
	f := loadFigures{heapPerSession: float64(heapInUse()-heap0) / loadSessions,
		goroutines: (runtime.NumGoroutine() - g0) / loadSessions}
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	errs := make(chan error, loadSessions)
	for _, c := range conns {
		wg.Go(func() { errs <- turns(ctx, c) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.cpuPerFrame = (cpuTime() - cpu0) / (loadSessions * loadTurns * 5)
	for _, c := range conns {
		c.Close(websocket.StatusNormalClosure, "")
	}
	return f
}

// turns asks for loadTurns responses on c, each read to its response.done.
func turns(ctx context.Context, c *websocket.Conn) error {
	for range loadTurns {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create"}`)); err != nil {
			return err
		}
		for {
			_, m, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if strings.Contains(string(m[:min(len(m), 40)]), "response.done") {
				break
			}
		}
	}
	return nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// leanRelay is the baseline: a WebSocket relay on the same library that
// dials upstream with the fake's secret and copies messages both ways,
// with no routing, metering or watching.
func leanRelay(t *testing.T, upstream string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up, _, err := websocket.Dial(r.Context(), upstream+"?"+r.URL.RawQuery,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secretOpenAI}}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			up.CloseNow()
			return
		}
		go copyMessages(up, c)
		copyMessages(c, up)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func copyMessages(dst, src *websocket.Conn) {
	ctx := context.Background()
	for {
		typ, r, err := src.Reader(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				dst.Close(ce.Code, ce.Reason)
			} else {
				dst.CloseNow()
			}
			return
		}
		w, err := dst.Writer(ctx, typ)
		if err != nil {
			return
		}
		if _, err := io.Copy(w, r); err != nil {
			return
		}
		if w.Close() != nil {
			return
		}
	}
}
