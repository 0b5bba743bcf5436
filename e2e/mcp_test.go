package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/server"
)

// Credentials of the MCP tests: the server's own, and the keys of a
// profile that may reach it and one that may not.
const (
	envMCP      = "MCP_TOOLS_TOKEN"
	secretMCP   = "mcp-upstream-secret"
	keyTools    = "sk-e2e-tools"
	keyNoTools  = "sk-e2e-no-tools"
	mcpRevision = "2026-07-28"
)

// mcpServer is a real MCP server (the go-sdk's) behind the gateway, with
// what it was sent recorded.
type mcpServer struct {
	url string
	srv *httptest.Server
	// release lets the "slow" tool finish; it sends its progress first.
	release chan struct{}

	mu       sync.Mutex
	requests int
	auth     []string
	methods  []string
}

func (m *mcpServer) seen() (requests int, auth, methods []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, append([]string(nil), m.auth...), append([]string(nil), m.methods...)
}

// startMCPServer serves tools echo, slow and deploy (which asks for input
// once, as a multi round-trip request), a resource and a prompt.
// Stateful servers assign a session id to clients of revisions that have
// them.
func startMCPServer(t *testing.T, stateless bool) *mcpServer {
	m := &mcpServer{release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2})
		if err != nil {
			return nil, nil, err
		}
		select {
		case <-m.release:
		case <-time.After(10 * time.Second):
			return nil, nil, errors.New("never released")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "deploy"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: "Deploy?"}}, RequestState: "d-1"}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///readme", Name: "readme"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///readme", Text: "hello"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.requests++
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(m.srv.Close)
	m.url = m.srv.URL + "/mcp"
	return m
}

// mcpPolicy serves one provider (agent traffic needs none, a policy
// does) and the MCP server "tools": profile "tools" reaches it and its
// calls draw on budget "calls" (limit); "llm" reaches nothing.
func mcpPolicy(url string, limit uint64) fixture {
	return func(p policy) testkit.Policy {
		return testkit.Policy{
			Providers:  map[string]testkit.Provider{"openai": openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")},
			MCPServers: map[string]testkit.Service{"tools": {URL: url, CredentialEnv: envMCP}},
			Profiles: map[string]testkit.Profile{
				"tools": {MCPServers: []string{"tools"}, AgentBudgets: []string{"calls"}},
				"llm":   {},
			},
			Keys:    []testkit.Key{clientKey("tools-key", "tools", keyTools), clientKey("llm-key", "llm", keyNoTools)},
			Budgets: []testkit.Budget{dayBudget("calls", limit)},
		}
	}
}

// startMCP starts the gateway serving mcpPolicy for m.
func startMCP(t *testing.T, m *mcpServer, limit uint64) *env {
	return startWithOptions(t, mcpPolicy(m.url, limit), func(o *server.Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == envMCP {
				return secretMCP, true
			}
			v, ok := upstreamEnv[k]
			return v, ok
		}
	})
}

// bearer adds the caller's pistra key to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP connects the go-sdk's client through the gateway at
// revision rev ("" for the SDK's newest).
func (e *env) connectMCP(t *testing.T, key, rev string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + e.srv.PublicAddr() + "/mcp/tools", HTTPClient: &http.Client{Transport: bearer{key}}}
	cs, err := c.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func (e *env) callsSpent(t *testing.T) uint64 {
	t.Helper()
	row, ok := e.budgetRow("calls", "tools-key")
	if !ok {
		return 0
	}
	if row.Held != 0 {
		row = e.settledRow("calls", "tools-key")
	}
	return row.Spent
}

// TestMCPChargesEachCallOnce: at the newest revision (no sessions) and
// pinned to 2025-06-18 (with a session id) and 2025-03-26, tools/call,
// resources/read and prompts/get are charged once each; initialize,
// tools/list and notifications are not, nor a call the server answers
// with an error. The server's credential is sent, never the client's.
func TestMCPChargesEachCallOnce(t *testing.T) {
	for _, rev := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("revision "+cmpOr(rev, mcpRevision), func(t *testing.T) {
			m := startMCPServer(t, rev == "") // the newest revision has no sessions
			e := startMCP(t, m, 100)
			cs, err := e.connectMCP(t, keyTools, rev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := rev != ""; (cs.ID() != "") != want {
				t.Errorf("session id %q: want one %v", cs.ID(), want)
			}
			ctx := context.Background()
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if got := e.callsSpent(t); got != 0 {
				t.Fatalf("tools/list and the handshake charged %d", got)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("echo: %v %v", res, err)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///readme"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err != nil {
				t.Fatal(err)
			}
			if got := e.callsSpent(t); got != 3 {
				t.Fatalf("three calls charged %d", got)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
				t.Fatal("an unknown tool answered")
			}
			if got := e.callsSpent(t); got != 3 {
				t.Errorf("a call the server refused charged: spent %d", got)
			}
			_, auth, _ := m.seen()
			for _, a := range auth {
				if a != "Bearer "+secretMCP {
					t.Fatalf("the server was sent Authorization %q", a)
				}
			}
			e.checkCallCounted(t, "tool", "charged", 1)
		})
	}
}

// pistraCode is the gateway's code in the JSON-RPC error the SDK
// surfaced, "" when it surfaced none.
func pistraCode(err error) string {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 {
		return ""
	}
	var data struct {
		Code string `json:"pistra_code"`
	}
	if json.Unmarshal(rpcErr.Data, &data) != nil {
		return ""
	}
	return data.Code
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (e *env) checkCallCounted(t *testing.T, class, outcome string, want float64) {
	t.Helper()
	got := testkit.Counter(t, e.srv.Metrics().Registry(), "pistra_agent_calls_total",
		map[string]string{"kind": "mcp_server", "service": "tools", "class": class, "outcome": outcome})
	if got != want {
		t.Errorf("pistra_agent_calls_total{class=%s,outcome=%s} = %v, want %v", class, outcome, got, want)
	}
}

// TestMCPStreamRelayedAsItComes: a tool's progress notification reaches
// the client while the tool is still running: the stream is relayed
// event by event, not buffered until its result.
func TestMCPStreamRelayedAsItComes(t *testing.T) {
	m := startMCPServer(t, false)
	e := startMCP(t, m, 100)
	progressed := make(chan struct{}, 1)
	cs, err := e.connectMCP(t, keyTools, "", &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		select {
		case progressed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-progressed:
		case <-time.After(10 * time.Second):
		}
		close(m.release)
	}()
	params := &mcp.CallToolParams{Name: "slow"}
	params.SetProgressToken("p-1")
	start := time.Now()
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("slow: %v %v", res, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the progress notification came only with the result: the stream was held back")
	}
	if got := e.callsSpent(t); got != 1 {
		t.Errorf("the streamed call charged %d", got)
	}
}

// TestMCPBudgetExhaustedMidRun: with room for two calls, the third is
// refused before it reaches the server, with a JSON-RPC error the SDK
// surfaces carrying the gateway's code.
func TestMCPBudgetExhaustedMidRun(t *testing.T) {
	m := startMCPServer(t, true)
	e := startMCP(t, m, 2)
	cs, err := e.connectMCP(t, keyTools, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	before, _, _ := m.seen()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if pistraCode(err) != "budget_exceeded" {
		t.Fatalf("the third call: %v, want the gateway's budget_exceeded", err)
	}
	if after, _, _ := m.seen(); after != before {
		t.Errorf("the refused call reached the server (%d requests, then %d)", before, after)
	}
	if got := e.callsSpent(t); got != 2 {
		t.Errorf("spent %d, want 2", got)
	}
	// tools/list is not a call: it still passes.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list after the budget ran out: %v", err)
	}
}

// TestMCPRefusedKeyNeverReachesTheServer: a key whose profile does not
// allow the server is refused with 403 in JSON-RPC form before anything
// is sent; so is an unknown key.
func TestMCPRefusedKeyNeverReachesTheServer(t *testing.T) {
	m := startMCPServer(t, false)
	e := startMCP(t, m, 100)
	for key, code := range map[string]string{keyNoTools: "service_not_allowed", "sk-nobody": "invalid_api_key"} {
		for _, rev := range []string{"", "2025-06-18"} {
			if _, err := e.connectMCP(t, key, rev, nil); pistraCode(err) != code {
				t.Errorf("key %s at %q: %v, want %s", key, rev, err, code)
			}
		}
	}
	if n, _, _ := m.seen(); n != 0 {
		t.Errorf("the server saw %d requests", n)
	}
}

// TestMCPUnreachableNotCharged: a call the server never answers (it is
// gone) is refused by the gateway and given back.
func TestMCPUnreachableNotCharged(t *testing.T) {
	m := startMCPServer(t, true)
	e := startMCP(t, m, 100)
	cs, err := e.connectMCP(t, keyTools, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	m.srv.Close()
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if pistraCode(err) != "upstream_unreachable" {
		t.Fatalf("got %v, want upstream_unreachable", err)
	}
	if got := e.callsSpent(t); got != 0 {
		t.Errorf("spent %d on a call that never reached the server", got)
	}
}

// TestMCPMultiRoundCallChargedOnce: a tool that answers input_required
// is charged for the round that completes, not for each round: the
// SDK re-sends the call with the input, and the two rounds cost one.
func TestMCPMultiRoundCallChargedOnce(t *testing.T) {
	m := startMCPServer(t, true)
	e := startMCP(t, m, 100)
	cs, err := e.connectMCP(t, keyTools, "", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "deploy"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "deployed" {
		t.Fatalf("deploy: %v %v", res, err)
	}
	if got := e.callsSpent(t); got != 1 {
		t.Errorf("two rounds charged %d, want 1", got)
	}
	e.checkCallCounted(t, "tool", "input_required", 1)
	e.checkCallCounted(t, "tool", "charged", 1)
}
