package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/ledger"
	"github.com/pistra/pistra/runtime/server"
)

// How sessions end besides their clients' closing: a decoder that cannot
// follow, an upstream lost, a suspension.

// rawSession runs a fixed script on a plain WebSocket client at url, with
// the Authorization header given: two responses, each read to its
// response.done. It returns every message received, in order, and how the
// session then ended.
func rawSession(t *testing.T, url, auth string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {auth}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	var got [][]byte
	read := func(until string) {
		for {
			_, m, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			got = append(got, m)
			if strings.Contains(string(m[:min(len(m), 64)]), until) {
				return
			}
		}
	}
	read("session.created")
	for range 2 {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create"}`)); err != nil {
			t.Fatal(err)
		}
		read(`"response.done"`)
	}
	c.Close(websocket.StatusNormalClosure, "")
	return got
}

func TestSessionDesyncedDecoderLeavesBytesAlone(t *testing.T) {
	r := startSessions(t, 1_000_000)
	r.openai.SetSessionKnobs(fakeprovider.SessionKnobs{Desync: true})
	direct := rawSession(t, strings.Replace(r.policy.OpenAI, "http", "ws", 1)+"/realtime?model="+rtModel, "Bearer "+secretOpenAI)
	through := rawSession(t, "ws://"+r.srv.PublicAddr()+"/v1/realtime?model="+rtModel, "Bearer "+keySession)
	if len(direct) != len(through) {
		t.Fatalf("%d messages through the gateway; %d direct", len(through), len(direct))
	}
	for i := range direct {
		if string(direct[i]) != string(through[i]) {
			t.Errorf("message %d differs through the gateway (%d bytes; %d direct)", i, len(through[i]), len(direct[i]))
		}
	}
	if len(direct[4]) < 1<<20 {
		t.Errorf("the desynced response.done is %d bytes; want it past the decoder's bound", len(direct[4]))
	}
	budgetWait(t, "the decoder's turning off to be counted", func() bool {
		return r.budgetCounter("pistra_session_meter_off_total", map[string]string{"route": "realtime", "reason": "frame_too_large"}) == 1
	})
	if row := r.settledRow("voice-day", "voice-key"); row.Spent != 1 {
		t.Errorf("budget spent %d; want the session cost alone once the decoder is off", row.Spent)
	}
}

func TestSessionUpstreamLostSettlesWhatWasSeen(t *testing.T) {
	r := startSessions(t, 1_000_000)
	r.openai.SetSessionKnobs(fakeprovider.SessionKnobs{AbruptAfter: 2})
	c, err := r.realtimeConnect(t, keySession)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		if err := realtimeTurn(t, c, false); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Recv(ctx); websocket.CloseStatus(err) != websocket.StatusBadGateway {
		t.Errorf("the client's session ended with %v; want close 1014 (the upstream was lost)", err)
	}
	if row := r.settledRow("voice-day", "voice-key"); row.Spent != 1+131+232 {
		t.Errorf("budget spent %d; want 364, both responses seen", row.Spent)
	}
}

func TestSessionSuspensionClosesWithinAFlush(t *testing.T) {
	node, err := ledger.Open(ledger.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	<-node.Ready()
	r := startSessionsWith(t, 1_000_000, func(o *server.Options) { o.Ledger, o.Suspensions, o.LedgerHealth = node, node, node })
	t.Cleanup(func() { r.stop(); node.Shutdown() })
	waitLeader(t, node)

	c, err := r.realtimeConnect(t, keySession)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := realtimeTurn(t, c, false); err != nil {
		t.Fatal(err)
	}
	suspended := time.Now()
	if code := r.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"key","name":"voice-key","reason":"leaked"}`, nil); code != 200 {
		t.Fatalf("suspend the key: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Recv(ctx)
	took := time.Since(suspended)
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("the session ended with %v; want close 1008", err)
	}
	// One flush interval, and the slack of a loaded machine.
	if took > budget.FlushInterval+time.Second {
		t.Errorf("the session closed %v after the suspension; want within one flush interval (%v)", took, budget.FlushInterval)
	}
	budgetWait(t, "the fake to see the close", func() bool { return len(r.openai.SessionEnds()) == 1 })
	if end := r.openai.SessionEnds()[0]; end.Code != websocket.StatusPolicyViolation || !strings.Contains(end.Reason, "suspended") {
		t.Errorf("the fake saw %+v; want 1008 saying suspended", end)
	}
	if code := r.adminJSON("DELETE", "/admin/v1/suspensions/key/voice-key", "", nil); code != 200 {
		t.Fatalf("lift the key's suspension: %d", code)
	}

	s, err := r.liveConnect(t, keySession, liveModel)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := liveTurn(t, s); err != nil {
		t.Fatal(err)
	}
	if code := r.adminJSON("POST", "/admin/v1/suspensions", `{"kind":"provider","name":"live-gemini","reason":"incident"}`, nil); code != 200 {
		t.Fatalf("suspend the provider: %d", code)
	}
	_, err = s.Receive()
	var ce *gorilla.CloseError
	if !errors.As(err, &ce) || ce.Code != gorilla.ClosePolicyViolation || !strings.Contains(ce.Text, `provider "live-gemini" is suspended`) {
		t.Errorf("the Live session ended with %v; want 1008 naming the suspended provider", err)
	}
}
