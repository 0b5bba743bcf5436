package schema_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/schema"
)

func TestValidateIRAccepts(t *testing.T) {
	for name, g := range map[string]*plan.Graph{
		"maximal":   bundletest.Maximal(),
		"synthetic": bundletest.Synthetic(bundletest.Medium),
		"empty":     {SourceHash: strings.Repeat("0", 64), OnFidelityLoss: "allow"},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.ValidateIR(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestValidateIRRefuses mutates a valid bundle one way at a time and checks
// the error points at the mutated value and says what is wrong with it.
func TestValidateIRRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(doc map[string]any)
		want   []string
	}{
		{"unknown top-level field", func(d map[string]any) { d["routes"] = []any{} },
			[]string{"/: ", "additionalProperties 'routes' not allowed"}},
		{"unknown nested field", func(d map[string]any) { at(d, "plans", 0)["weight"] = 1 },
			[]string{"/plans/0: ", "'weight' not allowed"}},
		{"bad route", func(d map[string]any) { at(d, "tables", 0, "entries", 1)["route"] = "chat" },
			[]string{"/tables/0/entries/1/route: ", `"chat_completions"`}},
		{"missing required field", func(d map[string]any) { delete(d, "plans") },
			[]string{"/: ", "missing properties: 'plans'"}},
		{"missing nested required field", func(d map[string]any) { delete(at(d, "candidate_lists", 0, 1), "model") },
			[]string{"/candidate_lists/0/1: ", "'model'"}},
		{"unknown capability", func(d map[string]any) { at(d, "profiles", 1)["require_caps"] = []any{"telepathy"} },
			[]string{"/profiles/1/require_caps/0: ", "strict_tools"}},
		{"plaintext key", func(d map[string]any) { at(d, "keys", 0)["hash"] = "sk-live-123" },
			[]string{"/keys/0/hash: ", "does not match pattern"}},
		{"negative index", func(d map[string]any) { at(d, "plans", 1)["candidates"] = -1 },
			[]string{"/plans/1/candidates: ", "must be >= 0"}},
		{"wrong type", func(d map[string]any) { at(d, "providers", 0)["stream_usage"] = "yes" },
			[]string{"/providers/0/stream_usage: ", "expected boolean"}},
		{"bad window", func(d map[string]any) { at(d, "budgets", 0)["window"] = "week" },
			[]string{"/budgets/0/window: ", `"month"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := maximalDoc(t)
			c.mutate(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			err = schema.ValidateIR(b)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestValidateIRRefusesNonJSON(t *testing.T) {
	for _, in := range []string{"", "{", `{"a":1} {}`} {
		if err := schema.ValidateIR([]byte(in)); err == nil || !strings.Contains(err.Error(), "not JSON") {
			t.Errorf("%q: got %v", in, err)
		}
	}
}

func maximalDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := json.Marshal(bundletest.Maximal())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// at walks doc by object keys and array indexes to an object.
func at(doc any, path ...any) map[string]any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			doc = doc.(map[string]any)[k]
		case int:
			doc = doc.([]any)[k]
		}
	}
	return doc.(map[string]any)
}

// TestSchemaMatchesIRTypes keeps the schema and runtime/plan in step: every
// struct of the graph has a definition (the root for Graph, $defs/<Type>
// otherwise) listing exactly its JSON fields, requiring exactly those
// encoding/json always writes, and closed to others.
func TestSchemaMatchesIRTypes(t *testing.T) {
	var doc struct {
		definition
		Defs map[string]definition `json:"$defs"`
	}
	if err := json.Unmarshal(schema.IRSchema, &doc); err != nil {
		t.Fatal(err)
	}
	for _, typ := range bundletest.Structs() {
		def, ok := doc.definition, true
		if typ.Name() != "Graph" {
			def, ok = doc.Defs[typ.Name()]
		}
		if !ok {
			t.Errorf("plan.%s has no $defs entry", typ.Name())
			continue
		}
		props, required := jsonFields(typ)
		if got := slices.Sorted(maps.Keys(def.Properties)); !slices.Equal(got, props) {
			t.Errorf("plan.%s: schema properties %v, Go fields %v", typ.Name(), got, props)
		}
		if got := slices.Sorted(slices.Values(def.Required)); !slices.Equal(got, required) {
			t.Errorf("plan.%s: schema requires %v, Go always writes %v", typ.Name(), got, required)
		}
		if def.AdditionalProperties == nil || *def.AdditionalProperties {
			t.Errorf("plan.%s: schema must set additionalProperties: false", typ.Name())
		}
	}
}

type definition struct {
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

// jsonFields returns t's JSON field names and those without omitempty,
// each sorted.
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	slices.Sort(always)
	return all, always
}
