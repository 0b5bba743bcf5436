package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/suspend"
)

// rpcServer answers every POST with the JSON answer answer, recording
// what it was sent.
type rpcServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func startRPCServer(t *testing.T, answer string) *rpcServer {
	s := &rpcServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rpcServer) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// suspendedServices suspends the MCP servers named.
type suspendedServices struct{ suspendedProviders }

func (p suspendedServices) Suspended(k suspend.Kind, name string) (suspend.Suspension, bool) {
	return suspend.Suspension{Kind: k, Name: name, Reason: "maintenance"}, k == suspend.KindMCPServer && slices.Contains(p.suspendedProviders, name)
}

// callServer serves testGraph with MCP servers "tools" (at url) and "down"
// (suspended), both reachable by key k-default, its calls drawing on
// budget "calls" (cost_per_call 2); k-narrow reaches neither.
func callServer(t *testing.T, url string) *Server {
	g := testGraph()
	g.MCPServers = []plan.Service{{Name: "down", Kind: plan.KindMCPServer, URL: url}, {Name: "tools", Kind: plan.KindMCPServer, URL: url}}
	g.Budgets = []plan.Budget{{Name: "calls", Limit: 100, Window: plan.WindowDay, Per: plan.PerKey, CostType: plan.CostTotalToken,
		CostExpr: -1, CostPerCall: 2}}
	g.Profiles[0].MCPServers, g.Profiles[0].AgentBudgets = []int{0, 1}, []int{0}
	o := testOptions(g, http.DefaultTransport)
	o.Suspensions = suspendedServices{suspendedProviders{"down"}}
	return startOnLoopback(t, o)
}

func post(t *testing.T, url, key, body string, header ...string) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func (s *Server) spent(t *testing.T) (spent, held uint64) {
	rows, err := s.Budgets()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		spent, held = spent+r.Spent, held+r.Held
	}
	return spent, held
}

// TestMCPBatch: a 2025-03-26 batch is admitted call by call and each call
// charged by its own answer: a result is charged, an error is not, a list
// is free.
func TestMCPBatch(t *testing.T) {
	up := startRPCServer(t, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"no"}},`+
		`{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}]`)
	s := callServer(t, up.URL)
	resp, body := post(t, "http://"+s.PublicAddr()+"/mcp/tools", "k-default",
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"b"}},`+
			`{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		"Mcp-Protocol-Version", "2025-03-26")
	if resp.StatusCode != 200 || !strings.Contains(body, `"id":"b"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if spent, held := s.spent(t); spent != 2 || held != 0 {
		t.Errorf("spent %d held %d, want the one result's 2", spent, held)
	}
}

// TestMCPHeaderMismatch: Mcp-Method or Mcp-Name that contradict the body
// are refused before the server sees anything, as the revision that
// sends them requires.
func TestMCPHeaderMismatch(t *testing.T) {
	up := startRPCServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	s := callServer(t, up.URL)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search"}}`
	for _, h := range [][]string{{"Mcp-Method", "tools/list"}, {"Mcp-Method", "tools/call", "Mcp-Name", "other"},
		{"Mcp-Method", "tools/call", "Mcp-Name", "=?base64?b3RoZXI=?="}} {
		resp, out := post(t, "http://"+s.PublicAddr()+"/mcp/tools", "k-default", body, h...)
		if resp.StatusCode != 400 || !strings.Contains(out, `"pistra_code":"invalid_rpc"`) || !strings.Contains(out, `"id":1`) {
			t.Errorf("%v: %d %s", h, resp.StatusCode, out)
		}
	}
	resp, out := post(t, "http://"+s.PublicAddr()+"/mcp/tools", "k-default", body, "Mcp-Method", "tools/call", "Mcp-Name", "=?base64?c2VhcmNo?=")
	if resp.StatusCode != 200 || up.sent() != 1 {
		t.Errorf("matching headers: %d %s, server saw %d", resp.StatusCode, out, up.sent())
	}
}

// TestMCPSuspendedServer: a suspended server's calls are refused with
// service_suspended, in a 200 the SDKs read, and never sent.
func TestMCPSuspendedServer(t *testing.T) {
	up := startRPCServer(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	s := callServer(t, up.URL)
	resp, out := post(t, "http://"+s.PublicAddr()+"/mcp/down", "k-default", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	if resp.StatusCode != 200 || !strings.Contains(out, `"pistra_code":"service_suspended","status":503`) || !strings.Contains(out, "maintenance") {
		t.Errorf("%d %s", resp.StatusCode, out)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.PublicAddr()+"/mcp/down", nil)
	req.Header.Set("Authorization", "Bearer k-default")
	gr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	gr.Body.Close()
	if gr.StatusCode != 503 || up.sent() != 0 {
		t.Errorf("GET of a suspended server: %d, server saw %d", gr.StatusCode, up.sent())
	}
}

// TestPreflightCall: /v1/preflight answers for agent traffic what a call
// would cost, or the refusal it would get.
func TestPreflightCall(t *testing.T) {
	up := startRPCServer(t, `{}`)
	s := callServer(t, up.URL)
	base := "http://" + s.PublicAddr() + "/v1/preflight?route=mcp&service="
	resp, out := post(t, base+"tools&method=tools/call", "k-default", "")
	var a callPreflight
	if err := json.Unmarshal([]byte(out), &a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if !a.Charged || a.Class != "tool" || len(a.Costs) != 1 || a.Costs[0].Budget != "calls" || a.Costs[0].Cost != 2 {
		t.Errorf("got %+v", a)
	}
	if _, out := post(t, base+"tools&method=tools/list", "k-default", ""); !strings.Contains(out, `"charged":false`) {
		t.Errorf("tools/list: %s", out)
	}
	for _, c := range []struct{ key, service, code string }{
		{"k-narrow", "tools", "service_not_allowed"}, {"k-default", "nothing", "service_not_found"}, {"k-default", "down", "service_suspended"},
	} {
		if _, out := post(t, base+c.service+"&method=tools/call", c.key, ""); !strings.Contains(out, `"pistra_code":"`+c.code+`"`) {
			t.Errorf("%s %s: %s, want %s", c.key, c.service, out, c.code)
		}
	}
	if up.sent() != 0 {
		t.Errorf("a preflight reached the server")
	}
}
