package codegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// bundle.json is laid out like routing.go: the block types (graph,
// provider, channel, profile, ...) one field per line, everything else (a
// table entry, a candidate, a plan) one object per line. That keeps a policy
// change a small diff and the file about half the size of json.MarshalIndent,
// whose one-line-per-field layout is mostly indentation. Compacted, the
// output is byte for byte what encoding/json writes.

// marshalBundle writes g in that layout with a trailing newline. HTML
// escaping is off so CEL sources read as written ("a < b", not "a \u003c b").
func marshalBundle(g *plan.Graph) ([]byte, error) {
	w := &jsonWriter{}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	if err := w.value(reflect.ValueOf(*g), 0); err != nil {
		return nil, fmt.Errorf("codegen: encoding %s: %w", BundleFile, err)
	}
	w.buf.WriteString("\n")
	return w.buf.Bytes(), nil
}

type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// value writes v at the given nesting depth.
func (w *jsonWriter) value(v reflect.Value, depth int) error {
	switch {
	case v.Kind() == reflect.Struct && blockTypes[v.Type()]:
		return w.object(v, depth)
	case v.Kind() == reflect.Slice && !v.IsNil() && isComposite(v.Type().Elem()):
		return w.array(v, depth)
	}
	if err := w.enc.Encode(v.Interface()); err != nil {
		return err
	}
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
	return nil
}

func (w *jsonWriter) object(v reflect.Value, depth int) error {
	w.buf.WriteString("{")
	first := true
	for i := range v.NumField() {
		name, omitEmpty := jsonField(v.Type().Field(i))
		fv := v.Field(i)
		if name == "" || omitEmpty && isEmpty(fv) {
			continue
		}
		if !first {
			w.buf.WriteString(",")
		}
		first = false
		w.newline(depth + 1)
		fmt.Fprintf(&w.buf, "%q: ", name)
		if err := w.value(fv, depth+1); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	w.newline(depth)
	w.buf.WriteString("}")
	return nil
}

func (w *jsonWriter) array(v reflect.Value, depth int) error {
	if v.Len() == 0 {
		w.buf.WriteString("[]")
		return nil
	}
	w.buf.WriteString("[")
	for i := range v.Len() {
		if i > 0 {
			w.buf.WriteString(",")
		}
		w.newline(depth + 1)
		if err := w.value(v.Index(i), depth+1); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	w.newline(depth)
	w.buf.WriteString("]")
	return nil
}

func (w *jsonWriter) newline(depth int) {
	w.buf.WriteString("\n")
	w.buf.WriteString(strings.Repeat(" ", depth))
}

func isComposite(t reflect.Type) bool { return t.Kind() == reflect.Struct || t.Kind() == reflect.Slice }

// jsonField reads a field's JSON name ("" when it is not serialized) and
// whether it is omitted when empty.
func jsonField(f reflect.StructField) (name string, omitEmpty bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, strings.Contains(","+opts+",", ",omitempty,")
}

// isEmpty is encoding/json's notion of an empty value for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}
