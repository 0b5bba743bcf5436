package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// budgetMeteringPolicy: up-openai speaks only OpenAI and up-anthropic only
// Anthropic, so a client of the other dialect is served through a
// translator; every key draws on its own bucket of one TotalToken budget.
func budgetMeteringPolicy(names []string) fixture {
	return func(p policy) testkit.Policy {
		return testkit.Policy{
			Providers: twoNativeProviders(p),
			Profiles:  map[string]testkit.Profile{"metering": {Budgets: []string{"metered"}}},
			Keys:      caseKeys("metering", names...),
			Budgets:   []testkit.Budget{dayBudget("metered", 1000000)},
		}
	}
}

// meteringCase makes one request with key and returns the total tokens
// the answer reported to the client.
type meteringCase struct {
	name string
	run  func(t *testing.T, e *env, key string) uint64
}

func chatStreamTotal(t *testing.T, client openai.Client, p openai.ChatCompletionNewParams) uint64 {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content == "" {
		t.Fatalf("empty stream")
	}
	return uint64(acc.Usage.TotalTokens)
}

func messageTotal(u anthropic.Usage) uint64 {
	return uint64(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens)
}

var meteringCases = []meteringCase{
	{"chat", func(t *testing.T, e *env, key string) uint64 {
		client := e.openaiClient(key)
		got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"))
		if err != nil {
			t.Fatal(err)
		}
		return uint64(got.Usage.TotalTokens)
	}},
	{"chat-stream-asked", func(t *testing.T, e *env, key string) uint64 {
		p := chatParams("gpt-4o-mini")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		return chatStreamTotal(t, e.openaiClient(key), p)
	}},
	{"chat-stream-unasked", func(t *testing.T, e *env, key string) uint64 {
		// The client does not ask for usage, so it sees none; the gateway
		// asks on its behalf. What the fake reports for this prompt is
		// learnt by asking it directly, past the gateway and its budget.
		p := chatParams("gpt-4o-mini")
		client := e.openaiClient(key)
		stream := client.Chat.Completions.NewStreaming(context.Background(), p)
		for stream.Next() {
			if stream.Current().JSON.Usage.Valid() {
				t.Errorf("a stream that did not ask for usage got some: %s", stream.Current().RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		return chatStreamTotal(t, sdkclient.OpenAI(e.policy.OpenAI, secretOpenAI), p)
	}},
	{"messages-stream", func(t *testing.T, e *env, key string) uint64 {
		client := e.anthropicClient(key)
		msg, err := sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), messageParams("claude-haiku-4-5")))
		if err != nil {
			t.Fatal(err)
		}
		return messageTotal(msg.Usage)
	}},
	{"responses-stream", func(t *testing.T, e *env, key string) uint64 {
		client := e.openaiClient(key)
		stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "gpt-4o-mini", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}})
		var total uint64
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.completed" {
				total = uint64(ev.Response.Usage.TotalTokens)
			}
		}
		if err := stream.Err(); err != nil || total == 0 {
			t.Fatalf("responses stream: total %d, %v", total, err)
		}
		return total
	}},
	{"translated-chat", func(t *testing.T, e *env, key string) uint64 {
		client := e.openaiClient(key)
		got, err := client.Chat.Completions.New(context.Background(), chatParams("claude-haiku-4-5"))
		if err != nil {
			t.Fatal(err)
		}
		return uint64(got.Usage.TotalTokens)
	}},
	{"translated-chat-stream", func(t *testing.T, e *env, key string) uint64 {
		p := chatParams("claude-haiku-4-5")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		return chatStreamTotal(t, e.openaiClient(key), p)
	}},
	{"translated-messages", func(t *testing.T, e *env, key string) uint64 {
		client := e.anthropicClient(key)
		got, err := client.Messages.New(context.Background(), messageParams("gpt-4o-mini"))
		if err != nil {
			t.Fatal(err)
		}
		return messageTotal(got.Usage)
	}},
	{"translated-messages-stream", func(t *testing.T, e *env, key string) uint64 {
		client := e.anthropicClient(key)
		msg, err := sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), messageParams("gpt-4o-mini")))
		if err != nil {
			t.Fatal(err)
		}
		return messageTotal(msg.Usage)
	}},
}

// TestBudgetSettlesOnReportedUsage: whatever the route, streamed or not,
// passed through or translated, a served request is charged the usage its
// answer reported to the client, and nothing stays held.
func TestBudgetSettlesOnReportedUsage(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	var names []string
	for _, c := range meteringCases {
		names = append(names, c.name)
	}
	e := startWith(t, budgetMeteringPolicy(names))
	for _, c := range meteringCases {
		t.Run(c.name, func(t *testing.T) {
			reported := c.run(t, e, "sk-e2e-"+c.name)
			if reported == 0 {
				t.Fatal("the answer reported no usage")
			}
			if row := e.settledRow("metered", c.name); row.Spent != reported {
				t.Errorf("spent %d, want the %d tokens the answer reported", row.Spent, reported)
			}
		})
	}
}
