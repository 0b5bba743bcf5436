package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
)

// revProxyEnv, when set in the environment, turns this binary into the
// baseline gateway: a bare httputil.ReverseProxy in front of that URL.
const revProxyEnv = "PISTRA_BENCH_REVERSE_PROXY_TARGET"

// serveReverseProxy runs the baseline. Its transport gets the same idle
// pool size as pistrad's, so neither side pays for re-dialling. One line
// is added to ReverseProxy as it comes: full duplex. Without it the HTTP/1
// server closes the request body the proxy is still forwarding once the
// response starts (golang/go#40747), and a few percent of streams arrive
// cut, which the validation rejects. It costs nothing per request.
func serveReverseProxy(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 512
	rp.Transport = t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stats, err := serveStats()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "listening %s stats=%s\n", ln.Addr(), stats)
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	}))
}
