package e2e

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pistra/pistra/internal/testkit"
)

// strictPickParams asks claude-haiku-4-5 (served through the translator)
// with one strict tool whose integer property has bounds when bounded:
// OpenAI's strict mode takes them, Anthropic's refuses them.
func strictPickParams(bounded bool) openai.ChatCompletionNewParams {
	n := map[string]any{"type": "integer"}
	if bounded {
		n["minimum"], n["maximum"] = 1, 5
	}
	return openai.ChatCompletionNewParams{
		Model:    "claude-haiku-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "pick", Strict: openai.Bool(true),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"n": n},
				"required": []string{"n"}, "additionalProperties": false},
		})},
	}
}

// TestStrictToolLoweredForClaude: an OpenAI client's strict tool with
// integer bounds no longer earns Anthropic's 400 through the translator:
// the schema is lowered (the bounds advise the model in the description)
// and strict_tools is lost for that request, so a profile that rejects
// lossy serving is refused with fidelity_loss before anything is sent, one
// that allows it is served and counted, and a strict tool of portable
// keywords is served whole.
func TestStrictToolLoweredForClaude(t *testing.T) {
	e := startWith(t, func(p policy) testkit.Policy {
		pol := defaultPolicy(p)
		pol.Profiles["lenient"] = testkit.Profile{OnFidelityLoss: "allow"}
		pol.Keys = append(pol.Keys, clientKey("lenient", "lenient", keyLenient))
		return pol
	})
	ctx := context.Background()
	strict, lenient := e.openaiClient(keyDefault), e.openaiClient(keyLenient)
	_, err := strict.Chat.Completions.New(ctx, strictPickParams(true))
	wantOpenAIError(t, err, http.StatusBadRequest, "fidelity_loss")
	if n := len(e.anthropic.Requests()); n != 0 {
		t.Fatalf("a refused request reached the upstream (%d requests)", n)
	}
	var resp *http.Response
	got, err := lenient.Chat.Completions.New(ctx, strictPickParams(true), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	wantServedBy(t, resp, "up-anthropic", "openai_anthropic")
	if len(got.Choices) != 1 || len(got.Choices[0].Message.ToolCalls) != 1 || got.Choices[0].Message.ToolCalls[0].Function.Name != "pick" {
		t.Fatalf("answer %s, want a pick call", got.RawJSON())
	}
	if body := lastCall(t, e.anthropic).Body; !bytes.Contains(body, []byte(`"description":"{maximum: 5, minimum: 1}"`)) || !bytes.Contains(body, []byte(`"strict":true`)) {
		t.Errorf("upstream body %s, want the strict tool's bounds lowered into its description", body)
	}
	if n := e.downgrade("up-anthropic", "native", "strict_tools", "allowed"); n != 1 {
		t.Errorf("strict_tools allowed lost %v times, want 1", n)
	}
	if _, err := strict.Chat.Completions.New(ctx, strictPickParams(false)); err != nil {
		t.Errorf("a portable strict tool: %v", err)
	}
}
