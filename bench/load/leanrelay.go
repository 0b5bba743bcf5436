package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

// leanRelayEnv, when set in the environment, turns this binary into the
// cheapest Go relay there is: no routing, no headers but the two a body
// needs, no logging, no checks. It is the floor pistrad is measured
// against: every feature pistrad has must fit inside what this relay
// already spends.
const leanRelayEnv = "PISTRA_BENCH_LEAN_RELAY_TARGET"

// serveLeanRelay forwards each request's body to target on one pooled
// http.Transport and streams the answer back, flushing after every read.
func serveLeanRelay(target string) error {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 512
	t.DisableCompression = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "listening %s\n", ln.Addr())
	target = strings.TrimSuffix(target, "/")
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex() // see serveReverseProxy
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.Path, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.ContentLength = r.ContentLength
		req.Header["Content-Type"] = r.Header["Content-Type"]
		req.Header["Authorization"] = r.Header["Authorization"]
		resp, err := t.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header()["Content-Type"] = resp.Header["Content-Type"]
		w.WriteHeader(resp.StatusCode)
		flusher, _ := w.(http.Flusher)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if flusher != nil {
					flusher.Flush()
				}
			}
			if err != nil { // io.EOF included
				return
			}
		}
	}))
}
