package golden

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pistra/pistra/compiler/explain"
	"github.com/pistra/pistra/runtime/plan"
)

// runExplain runs each query of an explain.args file (the flags of
// `pistrac explain`, one query per line; # starts a comment) and returns
// the transcript: the query, then explain's output or its error.
func runExplain(t *testing.T, g *plan.Graph, file string) []byte {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, err := parseQuery(line)
		if err != nil {
			t.Fatalf("%s: %q: %v", file, line, err)
		}
		out.WriteString("$ pistrac explain " + line + "\n")
		if err := explain.Plan(&out, g, q); err != nil {
			out.WriteString("error: " + err.Error() + "\n")
		}
		out.WriteString("\n")
	}
	if out.Len() == 0 {
		t.Fatalf("%s holds no queries", file)
	}
	return out.Bytes()
}

func parseQuery(line string) (explain.Query, error) {
	var q explain.Query
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&q.Profile, "profile", "", "")
	fs.StringVar(&q.Key, "key", "", "")
	route := fs.String("route", "", "")
	fs.StringVar(&q.Model, "model", "", "")
	caps := fs.String("caps", "", "")
	suspend := fs.String("suspend", "", "")
	if err := fs.Parse(strings.Fields(line)); err != nil {
		return q, err
	}
	q.Route = plan.Route(*route)
	if *suspend != "" {
		q.Suspend = strings.Split(*suspend, ",")
	}
	var names []string
	if *caps != "" {
		names = strings.Split(*caps, ",")
	}
	set, err := capSet(names)
	q.Caps = set
	return q, err
}
