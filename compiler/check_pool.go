package compiler

import (
	"path/filepath"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// checkPool checks a pool's addresses, its scheme and its picker.
func (c *compiler) checkPool(name string, p srcPool) {
	at := func(elems ...any) cue.Path { return path(append([]any{"pools", name}, elems...)...) }
	c.hostPort(at("dns"), p.DNS)
	enum(c, at("scheme"), "scheme", p.Scheme, schemes)
	c.checkPicker(at, p)
	for _, s := range sortedKeys(p.Subsets) {
		c.hostPort(at("subsets", s, "dns"), p.Subsets[s].DNS)
	}
}

// checkPicker checks a pool's picker: its address, how it is reached and
// what its failure does, none of which means anything without a picker.
func (c *compiler) checkPicker(at func(...any) cue.Path, p srcPool) {
	if p.Picker == nil {
		for _, f := range []struct {
			name string
			set  bool
		}{{"picker_ca", p.PickerCA != nil}, {"picker_plaintext", p.PickerPlaintext != nil},
			{"picker_timeout", p.PickerTimeout != nil}, {"picker_failure", p.PickerFailure != nil}} {
			if f.set {
				c.errorf(at(f.name), "%s applies to an endpoint picker, and the pool names none; give picker or leave %s out", f.name, f.name)
			}
		}
		return
	}
	c.hostPort(at("picker"), *p.Picker)
	if p.PickerCA != nil {
		if !filepath.IsAbs(*p.PickerCA) {
			c.errorf(at("picker_ca"), "picker_ca %q is not an absolute path; pistrad reads it wherever it runs, so name the file absolutely", *p.PickerCA)
		}
		if p.PickerPlaintext != nil && *p.PickerPlaintext {
			c.errorf(at("picker_plaintext"), "picker_plaintext reaches the picker without TLS, so picker_ca would never be read; give one of them")
		}
	}
	if p.PickerTimeout != nil {
		c.duration(at("picker_timeout"), *p.PickerTimeout)
	}
	if p.PickerFailure != nil {
		enum(c, at("picker_failure"), "picker_failure", plan.PickerFailure(*p.PickerFailure), plan.PickerFailures)
	}
}
