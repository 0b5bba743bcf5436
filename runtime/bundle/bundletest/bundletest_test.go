package bundletest

import (
	"reflect"
	"testing"
)

// TestMaximalSetsEveryField is what makes Maximal useful: a field of the IR
// that is zero everywhere in it would go unnoticed by every round-trip test
// built on it.
func TestMaximalSetsEveryField(t *testing.T) {
	set := map[string]bool{}
	markSet(reflect.ValueOf(*Maximal()), set)
	for _, typ := range Structs() {
		for i := range typ.NumField() {
			if f := typ.Name() + "." + typ.Field(i).Name; !set[f] {
				t.Errorf("no value of Maximal sets %s", f)
			}
		}
	}
}

// markSet records "Type.Field" for every non-zero field under v.
func markSet(v reflect.Value, set map[string]bool) {
	switch v.Kind() {
	case reflect.Slice:
		for i := range v.Len() {
			markSet(v.Index(i), set)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				set[v.Type().Name()+"."+v.Type().Field(i).Name] = true
			}
			markSet(v.Field(i), set)
		}
	}
}

func TestSyntheticHasTheRequestedSize(t *testing.T) {
	g := Synthetic(Large)
	models := map[string]bool{}
	for _, p := range g.Providers {
		for _, m := range p.Models {
			models[m.Name] = true
		}
	}
	if len(g.Providers) != Large.Providers || len(models) != Large.Models || len(g.Profiles) != Large.Profiles ||
		len(g.Keys) != Large.Keys || len(g.Budgets) != Large.Budgets {
		t.Fatalf("got %d providers, %d models, %d profiles, %d keys, %d budgets; want %+v",
			len(g.Providers), len(models), len(g.Profiles), len(g.Keys), len(g.Budgets), Large)
	}
}
