package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
)

// budgetReloadPolicy serves the fake paused behind a Pause and draws the
// key's profile on budget; a budget of another name is not declared.
func budgetReloadPolicy(paused, budget string) fixture {
	return func(policy) testkit.Policy {
		return pacedPolicy(paused, "gpt-4o-mini", "30s", "capped", dayBudget(budget, 100000), clientKey("reloader", "capped", "sk-e2e-reloader"))
	}
}

// TestBudgetReloadDrains: a stream held on a budget that a reload then
// removes settles into that budget's bucket, which the admin report keeps
// listing while it drains; requests after the reload draw on the new
// budget alone.
func TestBudgetReloadDrains(t *testing.T) {
	skipNearDayEnd(t, 2*time.Minute)
	pause := fakeprovider.NewPause()
	_, url := budgetFake(t, fakeprovider.DialectOpenAI, secretOpenAI, pause.Wrap)
	e := startWith(t, budgetReloadPolicy(url, "before"))
	t.Cleanup(pause.Release)
	client := e.openaiClient("sk-e2e-reloader")

	p := chatParams("gpt-4o-mini")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	if !stream.Next() {
		t.Fatalf("the stream did not start: %v", stream.Err())
	}
	var acc openai.ChatCompletionAccumulator
	acc.AddChunk(stream.Current())
	held, ok := e.budgetRow("before", "reloader")
	if !ok || held.Held == 0 {
		t.Fatalf("no hold for the paused stream: %+v", held)
	}

	next := e.policy
	next.Fixture = budgetReloadPolicy(url, "after")
	e.writeBundle(next)
	if status := e.reload(); status != 200 {
		t.Fatalf("reload: %d", status)
	}
	if row, ok := e.budgetRow("before", "reloader"); !ok || row.Held != held.Held {
		t.Errorf("after the reload the removed budget's bucket is %+v (listed %v), want it draining with its hold of %d", row, ok, held.Held)
	}
	got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	if row := e.settledRow("after", "reloader"); row.Spent != uint64(got.Usage.TotalTokens) {
		t.Errorf("the new budget spent %d, want the %d of the request made after the reload", row.Spent, got.Usage.TotalTokens)
	}

	pause.Release()
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if row := e.settledRow("before", "reloader"); row.Spent != uint64(acc.Usage.TotalTokens) {
		t.Errorf("the removed budget's bucket spent %d, want the %d tokens of the stream held on it", row.Spent, acc.Usage.TotalTokens)
	}
	if row, _ := e.budgetRow("after", "reloader"); row.Spent != uint64(got.Usage.TotalTokens) {
		t.Errorf("the stream held before the reload was charged to the new budget too: %+v", row)
	}

}
