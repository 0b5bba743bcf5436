package schema_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/schema"
)

var update = flag.Bool("update", false, "rewrite the generated comment blocks of policy.cue")

// generated lists the comment blocks of policy.cue that are rendered from
// the runtime's own tables, so the schema a policy author reads cannot
// drift from what pistra does.
var generated = map[string][]string{
	"capabilities":   caps.Reference(70),
	"cost variables": expr.Reference(expr.KindCost),
	"rule variables": expr.Reference(expr.KindRule),
}

// TestSchemaDocsAreGenerated holds each generated block of policy.cue to
// its table; -update rewrites the blocks.
func TestSchemaDocsAreGenerated(t *testing.T) {
	src := string(schema.PolicyCUE)
	out := src
	for name, lines := range generated {
		begin := "// --- " + name + " ("
		end := "// --- end " + name + " ---"
		i, j := strings.Index(out, begin), strings.Index(out, end)
		if i < 0 || j < i {
			t.Fatalf("policy.cue has no %q ... %q block", begin, end)
		}
		lineStart := strings.LastIndex(out[:i], "\n") + 1
		indent := out[lineStart:i]
		headEnd := i + strings.Index(out[i:], "\n") + 1
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(strings.TrimRight(indent+"// "+l, " "))
			b.WriteString("\n")
		}
		out = out[:headEnd] + b.String() + indent + out[j:]
	}
	if out == src {
		return
	}
	if *update {
		if err := os.WriteFile("policy.cue", []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("policy.cue's generated comments are stale: run go test ./schema -update")
}

// TestSchemaNamesEveryCapability: the schema's comment names every
// capability and every CEL variable with its type.
func TestSchemaNamesEveryCapability(t *testing.T) {
	src := string(schema.PolicyCUE)
	for _, d := range caps.Docs {
		if !strings.Contains(src, "// "+d.Cap.String()+": ") {
			t.Errorf("policy.cue does not document capability %s", d.Cap)
		}
	}
	for _, kind := range []string{expr.KindCost, expr.KindRule} {
		for _, v := range expr.Variables(kind) {
			if !strings.Contains(src, "// "+v.Name+" ("+v.Type+"): ") {
				t.Errorf("policy.cue does not document the %s variable %s (%s)", kind, v.Name, v.Type)
			}
		}
	}
}
