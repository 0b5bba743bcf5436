package bundletest

import (
	"reflect"

	"github.com/pistra/pistra/runtime/plan"
)

// Structs lists plan.Graph and every struct type reachable from its
// fields, each once: the types a test must hold to a property field by
// field (that the schema lists them, that Maximal sets them).
func Structs() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var out []reflect.Type
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		out = append(out, t)
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[plan.Graph]())
	return out
}
