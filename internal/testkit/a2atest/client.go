package a2atest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// HTTPClient is an HTTP client presenting key as a bearer token on every
// request, as a gateway's caller does.
func HTTPClient(key string) *http.Client {
	return &http.Client{Transport: keyed{key: key, next: http.DefaultTransport}}
}

type keyed struct {
	key  string
	next http.RoundTripper
}

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// Discover resolves the card at base (an agent's root, or a gateway's URL
// of it) with key and connects an a2a-go client the way the card says,
// over JSON-RPC with the same key.
func Discover(ctx context.Context, t testing.TB, base, key string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	hc := HTTPClient(key)
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolve the card at %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("client from the card at %s: %v", base, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, card
}

// Connect connects an a2a-go client to the JSON-RPC endpoint url with
// key, without a card.
func Connect(ctx context.Context, t testing.TB, url, key string) *a2aclient.Client {
	t.Helper()
	c, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{Transport: a2a.TransportProtocolJSONRPC, URL: url}},
		a2aclient.WithJSONRPCTransport(HTTPClient(key)))
	if err != nil {
		t.Fatalf("client for %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Say is a user message of one text part.
func Say(text string) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})}
}

// StreamWork streams "work 2" through client and checks its events came
// as the agent sent them: each artifact is released (Step) only once the
// event before it has reached the client, so a relay that held the
// stream back would never deliver it. It returns the task's id.
func (a *Agent) StreamWork(ctx context.Context, t testing.TB, client *a2aclient.Client) a2a.TaskID {
	t.Helper()
	var task a2a.TaskID
	var got []string
	for ev, err := range client.SendStreamingMessage(ctx, Say("work 2")) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			task, got = ev.ID, append(got, "task")
		case *a2a.TaskStatusUpdateEvent:
			got = append(got, string(ev.Status.State))
			if ev.Status.State == a2a.TaskStateWorking {
				a.Step(t)
			}
		case *a2a.TaskArtifactUpdateEvent:
			text := ev.Artifact.Parts[0].(a2a.TextPart).Text
			got = append(got, text)
			if text == "part 1" {
				a.Step(t)
			}
		}
	}
	if want := "task working part 1 part 2 completed"; strings.Join(got, " ") != want {
		t.Fatalf("stream events %q, want %q", got, want)
	}
	return task
}
