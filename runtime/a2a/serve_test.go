package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/pistra/pistra/internal/testkit/a2atest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSendStreamAndTaskReadAreEachChargedOnce(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	ctx := testContext(t)
	client, card := a2atest.Discover(ctx, t, gw.base, clientKey)
	if card.URL != gw.base {
		t.Fatalf("the card through the gateway says url %q, want %q", card.URL, gw.base)
	}

	res, err := client.SendMessage(ctx, a2atest.Say("echo hi"))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := res.(*a2a.Message); !ok || m.Parts[0].(a2a.TextPart).Text != "hi" {
		t.Fatalf("send answered %#v", res)
	}
	if n := gw.charged(t); n != 1 {
		t.Fatalf("after one send, %d calls charged", n)
	}

	task := agent.StreamWork(ctx, t, client)
	if n := gw.charged(t); n != 2 {
		t.Fatalf("after a send and a stream, %d calls charged", n)
	}

	read, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: task})
	if err != nil || read.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task read: %v, %v", read, err)
	}
	if n := gw.charged(t); n != 3 {
		t.Fatalf("after a send, a stream and a task read, %d calls charged", n)
	}
	if agent.Calls("message/send") != 1 || agent.Calls("message/stream") != 1 || agent.Calls("tasks/get") != 1 {
		t.Fatalf("the agent saw %+v", agent.Seen())
	}
	if gw.counted(t, "message", "charged") != 2 || gw.counted(t, "task_read", "charged") != 1 {
		t.Fatal("the charged calls are not counted by class")
	}
}

func TestLongTaskAndFailingTaskCostTheSame(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	ctx := testContext(t)
	client := a2atest.Connect(ctx, t, gw.base, clientKey)

	go agent.Step(t)
	long, err := client.SendMessage(ctx, a2atest.Say("work 1"))
	if err != nil || long.(*a2a.Task).Status.State != a2a.TaskStateCompleted {
		t.Fatalf("long task: %#v, %v", long, err)
	}
	failed, err := client.SendMessage(ctx, a2atest.Say("fail"))
	if err != nil || failed.(*a2a.Task).Status.State != a2a.TaskStateFailed {
		t.Fatalf("failing task: %#v, %v", failed, err)
	}
	if gw.charged(t) != 2 || gw.counted(t, "message", "charged") != 2 {
		t.Fatalf("%d calls charged, want one each", gw.charged(t))
	}
}

func TestAgentErrorsAndFreeCallsAreNotCharged(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	ctx := testContext(t)
	client := a2atest.Connect(ctx, t, gw.base, clientKey)

	if _, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("reading a task that does not exist: %v", err)
	}
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: "no-such-task"}); err == nil {
		t.Fatal("cancelling a task that does not exist succeeded")
	}
	card, err := client.GetAgentCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if card.URL != gw.base || len(card.AdditionalInterfaces) != 2 {
		t.Fatalf("the extended card through the gateway: url %q, interfaces %+v", card.URL, card.AdditionalInterfaces)
	}
	if n := gw.charged(t); n != 0 {
		t.Fatalf("%d calls charged", n)
	}
	if agent.Calls("tasks/get") != 1 || agent.Calls("tasks/cancel") != 1 || agent.Calls("agent/getAuthenticatedExtendedCard") != 1 {
		t.Fatalf("the agent saw %+v", agent.Seen())
	}
	for class, outcome := range map[string]string{"task_read": "upstream_error", "task": "upstream_error", "card": "free"} {
		if gw.counted(t, class, outcome) != 1 {
			t.Errorf("no %s call counted %s", class, outcome)
		}
	}
}

func TestV1NamedCallIsChargedAsItsV03Name(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	msg := `{"role":"user","kind":"message","messageId":"m1","parts":[{"kind":"text","text":"echo v1"}]}`
	for _, name := range []string{"SendMessage", "message/send"} {
		resp, body := gw.post(t, clientKey, `{"jsonrpc":"2.0","id":7,"method":"`+name+`","params":{"message":`+msg+`}}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"v1"`) || strings.Contains(body, `"error"`) {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	if gw.charged(t) != 2 || gw.counted(t, "message", "charged") != 2 {
		t.Fatalf("%d charged", gw.charged(t))
	}
	if agent.Calls("SendMessage") != 1 || agent.Calls("message/send") != 1 {
		t.Fatalf("the agent saw %+v", agent.Seen())
	}
}

func TestRefusedCallNeverReachesTheAgent(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	ctx := testContext(t)
	client := a2atest.Connect(ctx, t, gw.base, otherKey)
	if _, err := client.SendMessage(ctx, a2atest.Say("echo hi")); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a refused send: %v", err)
	}
	resp, body := gw.post(t, otherKey, `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{}}`)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"pistra_code":"service_not_allowed"`) {
		t.Fatalf("refusal %d %s", resp.StatusCode, body)
	}
	if seen := agent.Seen(); len(seen) != 0 {
		t.Fatalf("the agent was sent %+v", seen)
	}
	if gw.charged(t) != 0 {
		t.Fatal("a refused call was charged")
	}
}

func TestTheAgentGetsItsCredentialNeverTheClients(t *testing.T) {
	agent := a2atest.Start(t)
	gw := startGateway(t, agent.URL)
	ctx := testContext(t)
	client, _ := a2atest.Discover(ctx, t, gw.base, clientKey)
	if _, err := client.SendMessage(ctx, a2atest.Say("echo hi")); err != nil {
		t.Fatal(err)
	}
	seen := agent.Seen()
	if len(seen) != 2 { // the card, the send
		t.Fatalf("the agent saw %+v", seen)
	}
	for _, s := range seen {
		if got := s.Header.Get("Authorization"); got != "Bearer "+agentSecret {
			t.Errorf("%s %s: Authorization %q", s.HTTPMethod, s.Path, got)
		}
		for k, vs := range s.Header {
			for _, v := range vs {
				if strings.Contains(v, clientKey) {
					t.Errorf("%s %s: the client's key in %s", s.HTTPMethod, s.Path, k)
				}
			}
		}
	}
}
