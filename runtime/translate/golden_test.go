package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit/goldenfile"
	"github.com/pistra/pistra/runtime/meter"
)

var update = flag.Bool("update", false, "rewrite the golden want files")

// fixedNow pins the created field of OpenAI output so goldens are stable.
var fixedNow = time.Unix(1764000000, 0)

func TestMain(m *testing.M) {
	now = func() time.Time { return fixedNow }
	os.Exit(m.Run())
}

// pair is one translation direction's functions, for the golden runner.
type pair struct {
	name     string
	request  func(dst, body []byte, o Options) ([]byte, bool, error)
	response func([]byte, string) ([]byte, meter.Usage, error)
	error    func(int, []byte) (int, []byte)
	stream   func(w io.Writer, model string, includeUsage bool) Stream
	// upstreamModel is the default Options.UpstreamModel and clientModel.
	upstreamModel string
	// validFrames checks every frame the stream translator writes.
	validFrames func([]byte) error
}

var pairs = []pair{
	{
		name: "openai_anthropic", request: OpenAIToAnthropicRequest, response: AnthropicToOpenAIResponse,
		error: AnthropicErrorToOpenAI, stream: NewAnthropicToOpenAIStream,
		upstreamModel: "claude-sonnet-4-5-20250929", validFrames: validOpenAIFrames,
	},
	{
		name: "anthropic_openai", request: AnthropicToOpenAIRequest, response: OpenAIToAnthropicResponse,
		error: OpenAIErrorToAnthropic,
		stream: func(w io.Writer, model string, _ bool) Stream {
			return NewOpenAIToAnthropicStream(w, model)
		},
		upstreamModel: "gpt-4o-2024-08-06", validFrames: validAnthropicFrames,
	},
	{
		name: "responses_anthropic",
		request: func(dst, body []byte, o Options) ([]byte, bool, error) {
			var custom []string
			return ResponsesToAnthropicRequest(dst, body, o, &custom)
		},
		response: func(body []byte, model string) ([]byte, meter.Usage, error) {
			return AnthropicToResponsesResponse(body, model, goldenCustom)
		},
		error: AnthropicErrorToResponses,
		stream: func(w io.Writer, model string, _ bool) Stream {
			return NewAnthropicToResponsesStream(w, model, goldenCustom)
		},
		upstreamModel: "claude-sonnet-4-5-20250929", validFrames: validResponsesFrames,
	},
	{
		name: "anthropic_responses", request: AnthropicToResponsesRequest, response: ResponsesToAnthropicResponse,
		error: OpenAIErrorToAnthropic,
		stream: func(w io.Writer, model string, _ bool) Stream {
			return NewResponsesToAnthropicStream(w, model)
		},
		upstreamModel: "gpt-5-mini", validFrames: validAnthropicFrames,
	},
}

// goldenCustom is the client's custom tools in the responses_anthropic
// goldens: Codex's apply_patch.
func goldenCustom(name string) bool { return name == "apply_patch" }

// caseOptions is a case's optional options.json.
type caseOptions struct {
	UpstreamModel    *string `json:"upstream_model"`
	DefaultMaxTokens *int64  `json:"default_max_tokens"`
	AnthropicVersion *string `json:"anthropic_version"`
	IncludeUsage     bool    `json:"include_usage"`
}

func (p pair) options(t *testing.T, dir string) (Options, bool) {
	o := Options{UpstreamModel: p.upstreamModel, DefaultMaxTokens: 4096, AnthropicVersion: "2023-06-01"}
	var c caseOptions
	b, err := os.ReadFile(filepath.Join(dir, "options.json"))
	if errors.Is(err, os.ErrNotExist) {
		return o, false
	}
	if err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("options.json: %v", err)
	}
	if c.UpstreamModel != nil {
		o.UpstreamModel = *c.UpstreamModel
	}
	if c.DefaultMaxTokens != nil {
		o.DefaultMaxTokens = *c.DefaultMaxTokens
	}
	if c.AnthropicVersion != nil {
		o.AnthropicVersion = *c.AnthropicVersion
	}
	return o, c.IncludeUsage
}

// TestGolden runs every case folder under testdata/<pair>/<kind>/, kind
// being request, response, error or stream. A case holds the upstream-bound
// or upstream-sent input (in.json, or in.sse for streams), an optional
// options.json, and the wants (want.json; want.sse and want.json for
// streams), which -update rewrites.
func TestGolden(t *testing.T) {
	for _, p := range pairs {
		kinds := map[string]func(*testing.T, string){
			"request": p.runRequest, "response": p.runResponse, "error": p.runError, "stream": p.runStream,
		}
		for kind, run := range kinds {
			dirs, _ := filepath.Glob(filepath.Join("testdata", p.name, kind, "*"))
			if len(dirs) == 0 {
				t.Errorf("no %s/%s cases", p.name, kind)
			}
			for _, dir := range dirs {
				t.Run(p.name+"/"+kind+"/"+filepath.Base(dir), func(t *testing.T) { run(t, dir) })
			}
		}
	}
}

func (p pair) runRequest(t *testing.T, dir string) {
	o, _ := p.options(t, dir)
	out, stream, err := p.request(nil, readFile(t, dir, "in.json"), o)
	var want any = map[string]any{"stream": stream, "body": json.RawMessage(out)}
	if err != nil {
		want = map[string]string{"error": err.Error()}
	}
	goldenfile.Check(t, filepath.Join(dir, "want.json"), indentJSON(t, want), *update)
}

func (p pair) runResponse(t *testing.T, dir string) {
	out, usage, err := p.response(readFile(t, dir, "in.json"), p.upstreamModel)
	var want any = map[string]any{"usage": usage, "body": json.RawMessage(out)}
	if err != nil {
		want = map[string]string{"error": err.Error()}
	}
	goldenfile.Check(t, filepath.Join(dir, "want.json"), indentJSON(t, want), *update)
}

func (p pair) runError(t *testing.T, dir string) {
	var in struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
		Text   string          `json:"text"` // a body that is not JSON
	}
	if err := json.Unmarshal(readFile(t, dir, "in.json"), &in); err != nil {
		t.Fatal(err)
	}
	body := []byte(in.Body)
	if in.Text != "" {
		body = []byte(in.Text)
	}
	status, out := p.error(in.Status, body)
	goldenfile.Check(t, filepath.Join(dir, "want.json"), indentJSON(t, map[string]any{"status": status, "body": json.RawMessage(out)}), *update)
}

// runStream feeds the upstream bytes whole, byte by byte, line by line and
// in random splits; every chunking must give the same frames, usage and end.
func (p pair) runStream(t *testing.T, dir string) {
	_, includeUsage := p.options(t, dir)
	in := readFile(t, dir, "in.sse")
	var first streamResult
	for i, split := range chunkings(in) {
		got := p.feed(t, split, includeUsage)
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(got.frames, first.frames) || got.summary != first.summary {
			t.Fatalf("chunking %d differs from whole-body feed:\n%s\nwant:\n%s", i, got.frames, first.frames)
		}
	}
	if err := p.validFrames(first.frames); err != nil {
		t.Errorf("invalid frames: %v", err)
	}
	goldenfile.Check(t, filepath.Join(dir, "want.sse"), first.frames, *update)
	goldenfile.Check(t, filepath.Join(dir, "want.json"), []byte(first.summary), *update)
}

type streamResult struct {
	frames  []byte
	summary string // usage and the Close error, as indented JSON
}

func (p pair) feed(t *testing.T, chunks [][]byte, includeUsage bool) streamResult {
	var w frameWriter
	s := p.stream(&w, p.upstreamModel, includeUsage)
	var writeErr error
	for _, c := range chunks {
		if _, err := s.Write(c); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	closeErr := s.Close()
	if w.err != nil {
		t.Fatal(w.err)
	}
	summary := map[string]any{"usage": s.Usage(), "write_error": errString(writeErr), "close_error": errString(closeErr)}
	return streamResult{frames: w.buf.Bytes(), summary: string(indentJSON(t, summary))}
}

// frameWriter records client output and checks that every write ends on a
// frame boundary, which is what lets the proxy flush after each write.
type frameWriter struct {
	buf bytes.Buffer
	err error
}

func (w *frameWriter) Write(p []byte) (int, error) {
	if !bytes.HasSuffix(p, []byte("\n\n")) && w.err == nil {
		w.err = fmt.Errorf("write does not end on a frame boundary: %q", p)
	}
	return w.buf.Write(p)
}

func chunkings(in []byte) [][][]byte {
	whole := [][]byte{in}
	bytewise := make([][]byte, len(in))
	for i := range in {
		bytewise[i] = in[i : i+1]
	}
	lines := bytes.SplitAfter(in, []byte("\n"))
	out := [][][]byte{whole, bytewise, lines}
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 42))
		var split [][]byte
		for rest := in; len(rest) > 0; {
			n := min(1+r.IntN(64), len(rest))
			split, rest = append(split, rest[:n]), rest[n:]
		}
		out = append(out, split)
	}
	return out
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func readFile(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // show the bytes the translator wrote
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return buf.Bytes()
}
