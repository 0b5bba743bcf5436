//go:build unix

package h1_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// benchEvent is one chat chunk of the streamed answer; benchEvents of them
// and [DONE] make a stream, each flushed on its own as an upstream does.
const (
	benchEvent  = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}` + "\n\n"
	benchEvents = 50
)

// benchPayload is the small JSON answer; benchStream the event stream.
var (
	benchPayload = `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`
	benchStream  = strings.Repeat(benchEvent, benchEvents) + "data: [DONE]\n\n"
)

// benchHandler answers /sse with benchStream, each event flushed on its
// own as an upstream does, and anything else with benchPayload.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/sse" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, benchPayload)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	for range benchEvents {
		io.WriteString(w, benchEvent)
		f.Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
})

// benchKinds are the two exchanges: path and the answer's bytes.
var benchKinds = []struct{ name, path, want string }{{"json", "/v1/models", benchPayload}, {"sse", "/sse", benchStream}}

// BenchmarkRoundTrip sends the same exchanges through h1.Client and
// through net/http's Transport (as pistrad's -stdlib-upstream-client
// tunes it) against one loopback server: a small JSON answer, and an
// event stream of 50 chunks flushed one by one. Besides ns/op (wall time
// over the parallel goroutines) it reports cpu-ns/op, the process's user
// and system CPU per exchange, the server's share included: the server
// is the same for both clients, so the difference is the clients'.
func BenchmarkRoundTrip(b *testing.B) {
	s := httptest.NewServer(benchHandler)
	defer s.Close()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	type roundTripper interface {
		http.RoundTripper
		CloseIdleConnections()
	}
	clients := []struct {
		name string
		rt   roundTripper
	}{
		{"h1", h1.New(dialer, h1.Options{MaxIdlePerHost: 512, IdleTimeout: time.Minute})},
		{"stdlib", &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute,
			DisableCompression: true, WriteBufferSize: 16 << 10, ReadBufferSize: 16 << 10}},
	}
	for _, kind := range benchKinds {
		for _, c := range clients {
			b.Run(kind.name+"/"+c.name, func(b *testing.B) {
				defer c.rt.CloseIdleConnections()
				benchExchanges(b, c.rt, s.URL+kind.path, len(kind.want))
			})
		}
	}
}

// BenchmarkServe serves the same exchanges through h1.Server and through
// net/http's server alone, to one h1.Client on loopback: the client is
// the same for both, so the difference in allocs/op and cpu-ns/op is the
// servers'.
func BenchmarkServe(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	lean := &h1.Server{Handler: benchHandler, Fallback: &http.Server{Handler: benchHandler}}
	go lean.Serve(ln)
	defer lean.Close()
	std := httptest.NewServer(benchHandler)
	defer std.Close()
	client := h1.New(&net.Dialer{Timeout: 5 * time.Second}, h1.Options{MaxIdlePerHost: 512, IdleTimeout: time.Minute})
	defer client.CloseIdleConnections()
	for _, kind := range benchKinds {
		for _, srv := range []struct{ name, base string }{{"h1", "http://" + ln.Addr().String()}, {"stdlib", std.URL}} {
			b.Run(kind.name+"/"+srv.name, func(b *testing.B) {
				benchExchanges(b, client, srv.base+kind.path, len(kind.want))
			})
		}
	}
}

func benchExchanges(b *testing.B, rt http.RoundTripper, url string, want int) {
	b.ReportAllocs()
	cpu := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != int64(want) {
				b.Errorf("body: %d bytes, %v; want %d", n, err, want)
				return
			}
		}
	})
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU the process has used, user and system, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
