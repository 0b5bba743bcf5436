package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
	"github.com/pistra/pistra/runtime/server"
)

// The policy `make run` serves, its development key, and the upstream base
// URLs scripts/run.sh starts its fakes on; the test moves those to fakes of
// its own on random ports.
const (
	defaultPolicyDir    = "../policies"
	devKey              = "sk-pistra-dev"
	defaultOpenAIURL    = "http://127.0.0.1:9901/v1"
	defaultAnthropicURL = "http://127.0.0.1:9902/v1"
)

// defaultPolicyEnv holds the credentials under the variables the default
// policy names.
var defaultPolicyEnv = map[string]string{
	"PISTRA_FAKE_OPENAI_KEY":    "sk-e2e-fake-openai-secret",
	"PISTRA_FAKE_ANTHROPIC_KEY": "sk-e2e-fake-anthropic-secret",
}

// startDefaultPolicy serves the real default policy over two fakes:
// e.openai stands for fake-openai, e.anthropic for fake-anthropic.
func startDefaultPolicy(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, logs: &testkit.SyncBuffer{}}
	var openaiURL, anthropicURL string
	e.openai, openaiURL = fakeprovider.Start(t, fakeprovider.Options{
		Dialect: fakeprovider.DialectOpenAI, Key: defaultPolicyEnv["PISTRA_FAKE_OPENAI_KEY"]})
	e.anthropic, anthropicURL = fakeprovider.Start(t, fakeprovider.Options{
		Dialect: fakeprovider.DialectAnthropic, Key: defaultPolicyEnv["PISTRA_FAKE_ANTHROPIC_KEY"]})
	dir := copyDefaultPolicy(t, map[string]string{defaultOpenAIURL: openaiURL, defaultAnthropicURL: anthropicURL})
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatalf("compile the default policy: %v", err)
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	e.bundlePath = filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(e.bundlePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkLogsHide(t, e.logs.String(), devKey, defaultPolicyEnv) })
	e.srv, err = server.New(server.Options{
		PublicAddr: "127.0.0.1:0",
		AdminAddr:  "127.0.0.1:0",
		AdminToken: adminToken,
		Load:       e.loadBundle,
		LookupEnv:  func(k string) (string, bool) { v, ok := defaultPolicyEnv[k]; return v, ok },
		Logger:     slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stop)
	return e
}

// copyDefaultPolicy copies the default policy's .cue files into a fresh
// directory with every base URL in moves replaced, and fails when one of
// them is no longer in the policy.
func copyDefaultPolicy(t *testing.T, moves map[string]string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(defaultPolicyDir, "*.cue"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .cue files in %s (%v)", defaultPolicyDir, err)
	}
	found := map[string]bool{}
	dir := t.TempDir()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		for from, to := range moves {
			found[from] = found[from] || strings.Contains(text, `"`+from+`"`)
			text = strings.ReplaceAll(text, `"`+from+`"`, `"`+to+`"`)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for from := range moves {
		if !found[from] {
			t.Fatalf("the default policy no longer names the base URL %s", from)
		}
	}
	return dir
}

// checkLogsHide fails the test when a secret or the client key was logged.
func checkLogsHide(t *testing.T, logs, key string, secrets map[string]string) {
	if strings.Contains(logs, key) {
		t.Errorf("the client key appears in the logs")
	}
	for name, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the secret in %s appears in the logs", name)
		}
	}
}

// chatCapable reports whether a model the OpenAI list offers holds
// conversations: the list is per dialect, and the default policy's
// embedding and instruct models answer on their own OpenAI routes only.
func chatCapable(id string) bool {
	return !strings.HasPrefix(id, "text-embedding-") && !strings.HasSuffix(id, "-instruct")
}

// TestDefaultPolicyServesEveryModel: every conversational model the dev key
// lists in either dialect answers, streamed and not, whichever fake and
// channel the default policy sends it to.
func TestDefaultPolicyServesEveryModel(t *testing.T) {
	e := startDefaultPolicy(t)
	ctx := context.Background()
	oc := e.openaiClient(devKey)
	var openaiModels []string
	pager := oc.Models.ListAutoPaging(ctx)
	for pager.Next() {
		openaiModels = append(openaiModels, pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		t.Fatalf("list models (OpenAI): %v", err)
	}
	servedBy := map[string]bool{}
	for _, id := range openaiModels {
		if !chatCapable(id) {
			continue
		}
		t.Run("chat/"+id, func(t *testing.T) {
			servedBy[checkChat(t, oc, id).Header.Get("Pistra-Provider")] = true
		})
	}
	// The chat models must span both providers, or the list missed some.
	if !servedBy["fake-openai"] || !servedBy["fake-anthropic"] {
		t.Errorf("chat served by %v of %v: want both fake-openai and fake-anthropic", servedBy, openaiModels)
	}

	ac := e.anthropicClient(devKey)
	var anthropicModels []string
	apager := ac.Models.ListAutoPaging(ctx, anthropic.ModelListParams{})
	for apager.Next() {
		anthropicModels = append(anthropicModels, apager.Current().ID)
	}
	if err := apager.Err(); err != nil {
		t.Fatalf("list models (Anthropic): %v", err)
	}
	if len(anthropicModels) == 0 {
		t.Fatal("the dev key lists no models in the Anthropic dialect")
	}
	// Single-route models are offered only where they answer, so every
	// model the Anthropic list offers holds a conversation.
	for _, id := range anthropicModels {
		if !chatCapable(id) {
			t.Errorf("the Anthropic list offers %q, which answers on one OpenAI route only", id)
			continue
		}
		t.Run("messages/"+id, func(t *testing.T) { checkMessages(t, ac, id) })
	}
	_, err := oc.Chat.Completions.New(ctx, chatParams("text-embedding-3-small"))
	wantOpenAIError(t, err, http.StatusNotFound, "model_not_on_route")
}

// checkChat makes one chat completion and one stream with model, wants the
// fake's reply from both, and returns the completion's response.
func checkChat(t *testing.T, client openai.Client, model string) *http.Response {
	t.Helper()
	var resp *http.Response
	got, err := client.Chat.Completions.New(context.Background(), chatParams(model), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat %s: %v", model, err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Errorf("chat %s replied %+v", model, got.Choices)
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(model))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream %s: %v", model, err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Errorf("chat stream %s accumulated %+v", model, acc.Choices)
	}
	return resp
}

// checkMessages makes one Messages call and one stream with model and
// wants the fake's reply from both.
func checkMessages(t *testing.T, client anthropic.Client, model string) {
	t.Helper()
	got, err := client.Messages.New(context.Background(), messageParams(model))
	if err != nil {
		t.Fatalf("messages %s: %v", model, err)
	}
	if replyOf(got) != fakeprovider.ReplyText(prompt) {
		t.Errorf("messages %s replied %q", model, replyOf(got))
	}
	msg, err := sdkclient.ReadMessage(client.Messages.NewStreaming(context.Background(), messageParams(model)))
	if err != nil {
		t.Fatalf("messages stream %s: %v", model, err)
	}
	if replyOf(&msg) != fakeprovider.ReplyText(prompt) {
		t.Errorf("messages stream %s accumulated %q", model, replyOf(&msg))
	}
}

// TestDefaultPolicyFastFailsOver: with fake-openai answering 503, `fast`
// moves to fake-anthropic, which serves its own `fast` over whichever
// channel the policy picks.
func TestDefaultPolicyFastFailsOver(t *testing.T) {
	e := startDefaultPolicy(t)
	e.setFaults(e.openai, fakeprovider.Faults{FailStatus: http.StatusServiceUnavailable})
	resp := checkChat(t, e.openaiClient(devKey), "fast")
	if got := resp.Header.Get("Pistra-Provider"); got != "fake-anthropic" {
		t.Errorf("served by %q, want fake-anthropic", got)
	}
	if e.openai.Calls() == 0 {
		t.Errorf("fake-openai was never tried")
	}
	for _, c := range e.anthropic.Requests() {
		if c.Model != "claude-haiku-4-5" {
			t.Errorf("fake-anthropic got %s for model %q, want fast resolved to claude-haiku-4-5", c.Path, c.Model)
		}
	}
	if n := len(e.anthropic.Requests()); n != 2 {
		t.Errorf("fake-anthropic got %d calls, want the call and the stream", n)
	}
}

// TestDefaultPolicyEmbeddingsAndCompletions: the non-chat OpenAI routes of
// the default policy answer over the OpenAI SDK.
func TestDefaultPolicyEmbeddingsAndCompletions(t *testing.T) {
	e := startDefaultPolicy(t)
	client := e.openaiClient(devKey)
	emb, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(prompt)},
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) == 0 {
		t.Errorf("embeddings returned %d vectors", len(emb.Data))
	}
	comp, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
		Model:  "gpt-3.5-turbo-instruct",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
	})
	if err != nil {
		t.Fatalf("completions: %v", err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Text == "" {
		t.Errorf("completions replied %+v", comp.Choices)
	}
}
