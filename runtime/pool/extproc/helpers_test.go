package extproc_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/pool/extproc"
)

// startPlain serves a plaintext fake picker running script and dials it.
func startPlain(t *testing.T, o fakepicker.Options) (*fakepicker.Picker, *extproc.Client) {
	t.Helper()
	p := fakepicker.Start(t, o)
	return p, dial(t, p.Addr(), extproc.Options{Plaintext: true})
}

func dial(t *testing.T, addr string, o extproc.Options) *extproc.Client {
	t.Helper()
	c, err := extproc.Dial(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// query is a chat request with its request id, and a body of at least
// size bytes (padded in a field the picker does not read).
func query(size int) extproc.Query {
	h := http.Header{}
	h.Set("X-Request-Id", "req-1")
	h.Set("Content-Type", "application/json")
	body := `{"model":"llama-small","messages":[{"role":"user","content":"hi"}],"pad":"`
	if n := size - len(body) - 2; n > 0 {
		body += strings.Repeat("x", n)
	}
	return extproc.Query{Header: h, Body: []byte(body + `"}`), Timeout: 5 * time.Second}
}

// pick picks, failing the test on an error, and ends the answer with the
// test.
func pick(t *testing.T, c *extproc.Client, q extproc.Query) *extproc.Answer {
	t.Helper()
	a, err := c.Pick(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Done)
	return a
}

// goroutines returns a check that the goroutine count has come back to
// what it is now, waiting up to 5 s for streams being torn down, and
// failing with every goroutine's stack otherwise. The tests of this
// package run one at a time, so the count is theirs.
func goroutines(t *testing.T) func() {
	t.Helper()
	base := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:n])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// within fails unless f returns within d, and says how long it took.
func within(t *testing.T, d time.Duration, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	took := time.Since(start)
	if took > d {
		t.Fatalf("took %s, more than %s", took, d)
	}
	return took
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func equalList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}
