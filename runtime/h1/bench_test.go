package h1_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/h1"
)

// BenchmarkRoundTrip sends small JSON exchanges through h1.Client and
// through net/http's Transport against the same server.
func BenchmarkRoundTrip(b *testing.B) {
	payload := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(payload)
	}))
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
		{"h1", h1.New(dialer, 512, time.Minute)},
		{"stdlib", &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute, DisableCompression: true}},
	}
	for _, c := range clients {
		b.Run(c.name, func(b *testing.B) {
			defer c.rt.CloseIdleConnections()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/models", nil)
				if err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					resp, err := c.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || n != int64(len(payload)) {
						b.Errorf("body: %d bytes, %v", n, err)
						return
					}
				}
			})
		})
	}
}
