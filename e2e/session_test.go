package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/realtime"
	"google.golang.org/genai"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/server"
)

// WebSocket sessions end to end: OpenAI Realtime through openai-go's
// realtime package and Gemini Live through genai's Live client, into
// pistrad, out to the fakes on loopback.

const (
	envGemini    = "E2E_GEMINI_KEY"
	secretGemini = "upstream-gemini-secret"
	keySession   = "sk-e2e-session"
	rtModel      = "gpt-realtime"
	liveModel    = "gemini-live-2.5-flash"
)

// sessionRig is a gateway whose policy serves rtModel on the OpenAI fake's
// realtime route and liveModel on a Gemini fake, to keySession's profile,
// which draws on one budget of limit.
type sessionRig struct {
	*env
	gemini *fakeprovider.Server
}

func startSessions(t *testing.T, limit uint64) *sessionRig {
	t.Helper()
	return startSessionsWith(t, limit, nil)
}

// startSessionsWith is startSessions with the server's options adjusted by
// mod.
func startSessionsWith(t *testing.T, limit uint64, mod func(*server.Options)) *sessionRig {
	t.Helper()
	upstreamEnv[envGemini] = secretGemini
	gem, gemURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectGemini, Key: secretGemini})
	gemRoot := strings.TrimSuffix(gemURL, "/v1")
	e := startWithOptions(t, func(p policy) testkit.Policy {
		rt := testkit.Provider{BaseURL: p.OpenAI, CredentialEnv: envOpenAI, Models: modelsOf(0, rtModel),
			Channels: nativeChannel("openai", "realtime"), Timeout: "5s"}
		live := testkit.Provider{BaseURL: gemRoot, CredentialEnv: envGemini, Models: modelsOf(0, liveModel),
			Channels: nativeChannel("gemini"), Timeout: "5s"}
		return testkit.Policy{
			Providers: map[string]testkit.Provider{"rt-openai": rt, "live-gemini": live},
			Profiles: map[string]testkit.Profile{
				"voice":  {Budgets: []string{"voice-day"}},
				"narrow": {AllowedModels: []string{"gpt-4o-mini"}},
			},
			Keys:    []testkit.Key{clientKey("voice-key", "voice", keySession), clientKey("narrow-key", "narrow", keyLimited)},
			Budgets: []testkit.Budget{dayBudget("voice-day", limit)},
		}
	}, mod)
	return &sessionRig{env: e, gemini: gem}
}

func (r *sessionRig) realtimeConnect(t *testing.T, key string) (*realtime.RealtimeConnection, error) {
	t.Helper()
	c := openai.NewClient(option.WithBaseURL(r.baseURL()), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Realtime.Connect(ctx, realtime.RealtimeConnectionOptions{}, option.WithQuery("model", rtModel))
}

func (r *sessionRig) liveConnect(t *testing.T, key, model string) (*genai.Session, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: "ws://" + r.srv.PublicAddr(), APIVersion: "v1beta"}})
	if err != nil {
		t.Fatal(err)
	}
	return c.Live.Connect(ctx, model, &genai.LiveConnectConfig{})
}

// realtimeTurn asks for one response and reads to its response.done.
func realtimeTurn(t *testing.T, c *realtime.RealtimeConnection, commit bool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if commit {
		if err := c.SendRaw(ctx, []byte(`{"type":"input_audio_buffer.commit"}`)); err != nil {
			return err
		}
	}
	if err := c.SendRaw(ctx, []byte(`{"type":"response.create"}`)); err != nil {
		return err
	}
	for {
		ev, err := c.Recv(ctx)
		if err != nil {
			return err
		}
		if ev.Type == "response.done" {
			return nil
		}
	}
}

// liveTurn sends one turn and reads to its turnComplete.
func liveTurn(t *testing.T, s *genai.Session) error {
	t.Helper()
	done := true
	if err := s.SendClientContent(genai.LiveClientContentInput{Turns: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)},
		TurnComplete: &done}); err != nil {
		return err
	}
	for {
		m, err := s.Receive()
		if err != nil {
			return err
		}
		if m.ServerContent != nil && m.ServerContent.TurnComplete {
			return nil
		}
	}
}

// sessionLogged waits for the session's request line and returns it.
func (r *sessionRig) sessionLogged(t *testing.T, route string) map[string]any {
	t.Helper()
	var line map[string]any
	budgetWait(t, "the "+route+" session's request line", func() bool {
		for _, raw := range strings.Split(r.logs.String(), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(raw), &l) == nil && l["msg"] == "request" && l["route"] == route {
				line = l
				return true
			}
		}
		return false
	})
	return line
}

// checkMetered holds the log line and the token metric to what the fake
// reported.
func (r *sessionRig) checkMetered(t *testing.T, route, provider, model string, want fakeprovider.SessionUsage) {
	t.Helper()
	line := r.sessionLogged(t, route)
	if line["status"] != float64(101) || line["input_tokens"] != float64(want.Input) || line["output_tokens"] != float64(want.Output) {
		t.Errorf("log line %v; want status 101, input %d, output %d", line, want.Input, want.Output)
	}
	if want.Cached > 0 && line["cached_input_tokens"] != float64(want.Cached) {
		t.Errorf("log line cached_input_tokens %v; want %d", line["cached_input_tokens"], want.Cached)
	}
	for typ, n := range map[string]uint64{"input": want.Input, "output": want.Output, "cached_input": want.Cached} {
		got := r.budgetCounter("gen_ai_client_token_usage_total", map[string]string{
			"gen_ai_provider_name": provider, "gen_ai_request_model": model, "gen_ai_token_type": typ})
		if got != float64(n) {
			t.Errorf("token metric %s = %v; want %d", typ, got, n)
		}
	}
}

func TestRealtimeSessionMeteredThroughOpenAIClient(t *testing.T) {
	r := startSessions(t, 1_000_000)
	c, err := r.realtimeConnect(t, keySession)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := realtimeTurn(t, c, i == 1); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	c.Close()
	want := r.openai.SessionUsage()
	if want.Total == 0 {
		t.Fatal("the fake reported no usage")
	}
	r.checkMetered(t, "realtime", "rt-openai", rtModel, want)
	row := r.settledRow("voice-day", "voice-key")
	if row.Spent != 1+want.Total {
		t.Errorf("budget spent %d; want the session cost 1 and %d tokens", row.Spent, want.Total)
	}
	if ends := r.openai.SessionEnds(); len(ends) != 1 || ends[0].Code != websocket.StatusNormalClosure {
		t.Errorf("the fake saw %+v; want one normal close", ends)
	}
}

func TestLiveSessionMeteredThroughGenaiClient(t *testing.T) {
	for _, running := range []bool{false, true} {
		name := map[bool]string{false: "per_turn", true: "running_in_turn"}[running]
		t.Run(name, func(t *testing.T) {
			r := startSessions(t, 1_000_000)
			r.gemini.SetSessionKnobs(fakeprovider.SessionKnobs{LiveRunning: running})
			s, err := r.liveConnect(t, keySession, liveModel)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := liveTurn(t, s); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			s.Close()
			r.checkMetered(t, "live", "live-gemini", liveModel, r.gemini.SessionUsage())
		})
	}
}

func TestSessionBudgetSpentClosesBothSides1008(t *testing.T) {
	// The first response costs 131, the second 232: with the session's
	// cost of 1 the second takes a limit of 300 past it.
	r := startSessions(t, 300)
	c, err := r.realtimeConnect(t, keySession)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := realtimeTurn(t, c, false); err != nil {
		t.Fatal(err)
	}
	err = realtimeTurn(t, c, false)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = c.Recv(ctx)
		cancel()
	}
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("the client's session ended with %v; want close 1008", err)
	}
	budgetWait(t, "the fake to see the close", func() bool { return len(r.openai.SessionEnds()) == 1 })
	end := r.openai.SessionEnds()[0]
	if end.Code != websocket.StatusPolicyViolation || !strings.Contains(end.Reason, `budget "voice-day"`) || len(end.Reason) > 123 {
		t.Errorf("the fake saw %+v; want 1008 naming the budget in at most 123 bytes", end)
	}
	if row := r.settledRow("voice-day", "voice-key"); row.Spent != 1+131+232 {
		t.Errorf("budget spent %d; want 364, every response seen", row.Spent)
	}

	// Live: the client sees the code and the reason.
	s, err := r.liveConnect(t, keySession, liveModel)
	if err == nil {
		err = liveTurn(t, s)
		s.Close()
	}
	var ce *gorilla.CloseError
	if !errors.As(err, &ce) || ce.Code != gorilla.ClosePolicyViolation || !strings.Contains(ce.Text, `budget "voice-day"`) {
		t.Errorf("a Live session on a spent budget ended with %v; want 1008 naming the budget", err)
	}
}

func TestSessionRefusalsNeverReachTheUpstream(t *testing.T) {
	r := startSessions(t, 1_000_000)
	if _, err := r.realtimeConnect(t, "sk-not-a-key"); err == nil {
		t.Error("an unknown key opened a Realtime session")
	}
	if _, err := r.realtimeConnect(t, keyLimited); err == nil {
		t.Error("a key whose profile does not allow the model opened a Realtime session")
	}
	if _, err := r.liveConnect(t, "sk-not-a-key", liveModel); err == nil {
		t.Error("an unknown key opened a Live session")
	}
	for _, key := range []string{keyLimited, keySession} {
		model := liveModel
		if key == keySession {
			model = "gemini-unknown"
		}
		_, err := r.liveConnect(t, key, model)
		var ce *gorilla.CloseError
		if !errors.As(err, &ce) || ce.Code != gorilla.ClosePolicyViolation {
			t.Errorf("a Live session for %s with a refused model ended with %v; want close 1008", model, err)
		}
	}
	if n, m := r.openai.SessionsOpened(), r.gemini.SessionsOpened(); n+m != 0 {
		t.Errorf("the fakes accepted %d Realtime and %d Live sessions; want none", n, m)
	}
}
