package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
)

// BenchmarkMCPCall is one tools/call (2026-07-28, answered as JSON by a
// server on loopback) through pistrad, and through a lean
// relay (net/http/httputil's reverse proxy, on pistrad's transport) to
// the same server, in the same run. Client, relay and server share the process, so cpu-ns/op is
// the whole exchange's CPU; pistrad's added CPU per call is its figure
// less the lean relay's.
func BenchmarkMCPCall(b *testing.B) {
	up := mcpBenchServer(b)
	g := testGraph()
	g.MCPServers = []plan.Service{{Name: "tools", Kind: plan.KindMCPServer, URL: up.URL + "/mcp"}}
	g.Budgets = []plan.Budget{{Name: "calls", Limit: 1 << 60, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken,
		CostExpr: -1, CostPerCall: 1}}
	g.Profiles[0].MCPServers, g.Profiles[0].AgentBudgets = []int{0}, []int{0}
	o := testOptions(g, proxy.NewTransport(proxy.DefaultTransportOptions))
	s := startOnLoopback(b, o)
	target, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = proxy.NewTransport(proxy.DefaultTransportOptions) // the same pooling as pistrad's
	lean := httptest.NewServer(rp)
	b.Cleanup(lean.Close)
	client := &http.Client{Transport: proxy.NewTransport(proxy.DefaultTransportOptions)}
	b.Run("pistrad", func(b *testing.B) { benchMCPCall(b, client, "http://"+s.PublicAddr()+"/mcp/tools") })
	b.Run("lean-relay", func(b *testing.B) { benchMCPCall(b, client, lean.URL+"/mcp") })
}

// mcpBenchServer answers every tools/call with one fixed result, as a
// server answering in JSON does: the server's own work kept out of the
// figures, so what is left is the relays'.
func mcpBenchServer(b *testing.B) *httptest.Server {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}}`)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	b.Cleanup(up.Close)
	return up
}

func benchMCPCall(b *testing.B, client *http.Client, endpoint string) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer k-default")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"result"`)) {
			b.Fatalf("status %d: %s", resp.StatusCode, out)
		}
	}
	call() // connections up before the clock starts
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
