package meter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pistra/pistra/runtime/sse"
)

// translateFixtures holds runtime/translate's recorded upstream answers and
// streams, each with the Usage the translator read from it (want.json). The
// meter reads the same bytes on the passthrough path and must arrive at the
// same figures, so a request costs the same whichever path served it.
// anthropic_openai's upstream speaks OpenAI chat, openai_anthropic's
// Anthropic.
const translateFixtures = "../translate/testdata"

var fixtureShapes = map[string]Shape{"anthropic_openai": ShapeChat, "openai_anthropic": ShapeMessages}

// translated is the part of a fixture's want.json this test reads.
type translated struct {
	Usage      *Usage `json:"usage"`
	WriteError string `json:"write_error"`
}

func TestAgreesWithTranslators(t *testing.T) {
	n := 0
	for pair, shape := range fixtureShapes {
		for _, kind := range []string{"response", "stream"} {
			dirs, err := filepath.Glob(filepath.Join(translateFixtures, pair, kind, "*"))
			if err != nil || len(dirs) == 0 {
				t.Fatalf("no fixtures under %s/%s: %v", pair, kind, err)
			}
			for _, dir := range dirs {
				var want translated
				readJSON(t, filepath.Join(dir, "want.json"), &want)
				// A translator that refused the answer, or stopped at an
				// event it could not decode, read no whole-answer usage;
				// the meter reads on past such an event.
				if want.Usage == nil || want.WriteError != "" {
					continue
				}
				n++
				if got := meterFixture(t, shape, kind, dir); got != *want.Usage {
					t.Errorf("%s: meter reads %+v\ntranslator read %+v", dir, got, *want.Usage)
				}
			}
		}
	}
	t.Logf("%d fixtures agree", n)
	if n < 20 {
		t.Errorf("only %d fixtures compared", n)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// meterFixture meters a fixture's upstream bytes: a whole answer, or a
// stream split into events by runtime/sse as the relay splits it.
func meterFixture(t *testing.T, shape Shape, kind, dir string) Usage {
	if kind == "response" {
		b, err := os.ReadFile(filepath.Join(dir, "in.json"))
		if err != nil {
			t.Fatal(err)
		}
		u, err := ReadAnswer(shape, b)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		return u
	}
	b, err := os.ReadFile(filepath.Join(dir, "in.sse"))
	if err != nil {
		t.Fatal(err)
	}
	h := &meterHandler{}
	h.m.Reset(shape)
	var r sse.Reader
	if err := r.Feed(b, h); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(h); err != nil {
		t.Fatal(err)
	}
	return h.m.Usage()
}

// meterHandler feeds a StreamMeter from runtime/sse, as the relay does.
type meterHandler struct{ m StreamMeter }

func (h *meterHandler) Event(data []byte) error {
	h.m.Event(data)
	return nil
}
