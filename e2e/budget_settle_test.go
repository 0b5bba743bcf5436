package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// budgetSettlePolicy routes each model to an upstream that settles one
// way: fakes that report no usage (quiet-*), one that fails (gpt-4o-mini
// on up-openai, with a retry and no failover), fakes whose streams break
// after three events (cut-*), and fakes whose streams pause after their
// first event so a client can leave mid-stream (paced-*). Every key draws on its own bucket of one large budget.
func budgetSettlePolicy(u settleUpstreams, names []string) fixture {
	return func(p policy) testkit.Policy {
		upOpenAI := openAIProvider(p.OpenAI, envOpenAI, "gpt-4o-mini")
		upOpenAI.Retries = retries(1, "5xx")
		pacedOpenAI := openAIProvider(u.pacedOpenAI, envOpenAI, "paced-gpt")
		pacedOpenAI.Timeout = "10s"
		pacedAnthropic := anthropicProvider(u.pacedAnthropic, 8192, "paced-claude")
		pacedAnthropic.Timeout = "10s"
		return testkit.Policy{
			Providers: map[string]testkit.Provider{
				"quiet-openai":    openAIProvider(u.quietOpenAI, envOpenAI, "quiet-gpt"),
				"quiet-anthropic": anthropicProvider(u.quietAnthropic, 8192, "quiet-claude"),
				"up-openai":       upOpenAI,
				"cut-openai":      openAIProvider(p.Backup, envBackup, "cut-gpt"),
				"cut-anthropic":   anthropicProvider(p.Anthropic, 8192, "cut-claude"),
				"paced-openai":    pacedOpenAI,
				"paced-anthropic": pacedAnthropic,
			},
			Profiles: map[string]testkit.Profile{"settling": {Budgets: []string{"settle"}}},
			Keys:     caseKeys("settling", names...),
			Budgets:  []testkit.Budget{dayBudget("settle", 100000)},
		}
	}
}

// settleUpstreams are the URLs of budgetSettlePolicy's fakes of its own.
type settleUpstreams struct{ quietOpenAI, quietAnthropic, pacedOpenAI, pacedAnthropic string }

// settleCase is one request and the spend it must settle at.
type settleCase struct {
	name, path string
	body       string
	// gone: the client leaves after the first event of the stream; cut:
	// the upstream breaks the stream, and the client's ends in an error.
	gone, cut bool
	// status is the answer the client gets.
	status int
	// spend is what the bucket must show once the request is settled;
	// first is the first event's data, for the cases that settle on it.
	spend func(body string, first []byte) uint64
}

// hold is what the gateway holds for body: its bytes over four in, its
// max_tokens out.
func hold(maxTokens uint64) func(string, []byte) uint64 {
	return func(body string, _ []byte) uint64 { return uint64(len(body)/4) + maxTokens }
}

func chatBody(model string, stream bool, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, model, stream, maxTokens, prompt)
}

func messagesBody(model string, stream bool, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, model, stream, maxTokens, prompt)
}

// messageStartUsage is what an Anthropic stream's message_start reported:
// input and the placeholder output, all the usage a stream left after it
// has shown.
func messageStartUsage(_ string, first []byte) uint64 {
	var ev struct {
		Message struct {
			Usage struct {
				InputTokens              uint64 `json:"input_tokens"`
				CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
				CacheReadInputTokens     uint64 `json:"cache_read_input_tokens"`
				OutputTokens             uint64 `json:"output_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(first, &ev) != nil || ev.Message.Usage.InputTokens == 0 {
		return 0 // cannot be the spend: the case fails on it
	}
	u := ev.Message.Usage
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}

// TestBudgetSettlement: how each way a request ends settles its hold. A
// 2xx whose answer reports no usage, whole or streamed, in either dialect
// and on the Responses route (max_output_tokens), settles at the hold; an upstream failure relayed to the client (a 500,
// retried once, no failover) releases it; a stream that breaks upstream
// after its 200, or that the client leaves, settles on the usage the
// stream had shown, or at the hold when it had shown none (an OpenAI chat
// stream's usage comes last): the provider answered, and what it
// generated is spent.
func TestBudgetSettlement(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	_, quietOpenAI := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, fakeprovider.WithoutUsage)
	_, quietAnthropic := budgetFake(t, fakeprovider.DialectAnthropic, secretAnthropic, fakeprovider.WithoutUsage)
	pause := fakeprovider.NewPause()
	pacedOpenAI, pacedOpenAIURL := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, pause.Wrap)
	pacedAnthropic, pacedAnthropicURL := budgetFake(t, fakeprovider.DialectAnthropic, secretAnthropic, pause.Wrap)

	cases := []settleCase{
		{name: "quiet-chat", path: "/v1/chat/completions", body: chatBody("quiet-gpt", false, 200), status: 200, spend: hold(200)},
		{name: "quiet-chat-stream", path: "/v1/chat/completions", body: chatBody("quiet-gpt", true, 300), status: 200, spend: hold(300)},
		{name: "quiet-messages", path: "/v1/messages", body: messagesBody("quiet-claude", false, 400), status: 200, spend: hold(400)},
		{name: "quiet-messages-stream", path: "/v1/messages", body: messagesBody("quiet-claude", true, 500), status: 200, spend: hold(500)},
		{name: "quiet-responses", path: "/v1/responses", status: 200, spend: hold(900),
			body: fmt.Sprintf(`{"model":"quiet-gpt","max_output_tokens":900,"input":%q}`, prompt)},
		{name: "quiet-responses-stream", path: "/v1/responses", status: 200, spend: hold(950),
			body: fmt.Sprintf(`{"model":"quiet-gpt","stream":true,"max_output_tokens":950,"input":%q}`, prompt)},
		{name: "failing", path: "/v1/chat/completions", body: chatBody("gpt-4o-mini", false, 600), status: 500,
			spend: func(string, []byte) uint64 { return 0 }},
		{name: "cut-chat", path: "/v1/chat/completions", body: chatBody("cut-gpt", true, 650), cut: true, status: 200, spend: hold(650)},
		{name: "cut-messages", path: "/v1/messages", body: messagesBody("cut-claude", true, 660), cut: true, status: 200,
			spend: messageStartUsage},
		{name: "gone-chat", path: "/v1/chat/completions", body: chatBody("paced-gpt", true, 700), gone: true, status: 200, spend: hold(700)},
		{name: "gone-messages", path: "/v1/messages", body: messagesBody("paced-claude", true, 800), gone: true, status: 200,
			spend: messageStartUsage},
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
	}
	e := startWith(t, budgetSettlePolicy(settleUpstreams{quietOpenAI, quietAnthropic, pacedOpenAIURL, pacedAnthropicURL}, names))
	t.Cleanup(pause.Release) // runs first: nothing stays paused past the test
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: http.StatusInternalServerError})
	e.setFaults(e.backup, fakeprovider.Faults{CutAfter: 3})
	e.setFaults(e.anthropic, fakeprovider.Faults{CutAfter: 3})

	client := &http.Client{}
	defer client.CloseIdleConnections()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, first := e.settleRequest(t, client, c)
			if status != c.status {
				t.Fatalf("status %d, want %d", status, c.status)
			}
			want := c.spend(c.body, first)
			row := e.settledRow("settle", c.name)
			if row.Spent != want || row.Held != 0 {
				t.Errorf("bucket %+v, want spent %d, nothing held", row, want)
			}
		})
	}
	if n := e.openai.Calls(); n != 2 {
		t.Errorf("the failing upstream saw %d calls, want the call and its one retry", n)
	}
	if a, b := pacedOpenAI.Calls(), pacedAnthropic.Calls(); a != 1 || b != 1 {
		t.Errorf("the paced upstreams saw %d and %d calls, want 1 each", a, b)
	}
}

// settleRequest sends c's body with c's key and reads the answer: whole,
// or for a client that leaves, up to the first event's data. It returns
// the status and, for a stream, its first event's data.
func (e *env) settleRequest(t *testing.T, client *http.Client, c settleCase) (status int, first []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.srv.PublicAddr()+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-e2e-"+c.name)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if c.cut {
		b, _ := io.ReadAll(resp.Body) // the gateway cuts the connection after its error event
		if !strings.Contains(string(b), "upstream_stream_incomplete") {
			t.Errorf("a stream broken upstream did not end in an error event: %s", b)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return resp.StatusCode, []byte(data)
			}
		}
		return resp.StatusCode, nil
	}
	if !c.gone {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		if text := string(b); resp.StatusCode == http.StatusOK &&
			(strings.Contains(text, `"usage"`) || strings.Contains(text, "input_tokens") || strings.Contains(text, "prompt_tokens")) {
			t.Errorf("the quiet upstream's answer reports usage after all: %s", b)
		}
		return resp.StatusCode, nil
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			cancel() // the client leaves while the stream is paused upstream
			return resp.StatusCode, []byte(data)
		}
	}
	t.Fatalf("the stream ended before its first event: %v", lines.Err())
	return 0, nil
}
