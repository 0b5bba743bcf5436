package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// IRSchema is the JSON Schema (draft 2020-12) of bundle.json, the portable
// form of the decision graph. Tools may validate bundles against it.
//
//go:embed ir.schema.json
var IRSchema []byte

// IRSchemaURL is the $id of IRSchema.
const IRSchemaURL = "https://github.com/pistra/pistra/schema/ir.schema.json"

// maxReported bounds how many schema violations one error lists: a badly
// broken bundle would otherwise produce one line per element.
const maxReported = 10

// irSchema compiles the embedded schema once per process.
var irSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(IRSchemaURL, bytes.NewReader(IRSchema)); err != nil {
		return nil, fmt.Errorf("loading the IR schema: %w", err)
	}
	s, err := c.Compile(IRSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("compiling the IR schema: %w", err)
	}
	return s, nil
})

// ValidateIR checks a bundle.json document against IRSchema. The error lists
// each violation as "<JSON pointer>: <problem>", one per line.
func ValidateIR(bundleJSON []byte) error {
	s, err := irSchema()
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(bundleJSON))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("bundle is not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("bundle is not JSON: trailing data after the document")
	}
	err = s.Validate(doc)
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return violations(ve)
	}
	return err
}

// violations flattens the validator's tree to its leaves, which are the
// actionable messages; the inner nodes only say "does not validate".
func violations(root *jsonschema.ValidationError) error {
	var lines []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			lines = append(lines, loc+": "+e.Message)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(root)
	sort.Strings(lines)
	if n := len(lines); n > maxReported {
		lines = append(lines[:maxReported], fmt.Sprintf("... and %d more", n-maxReported))
	}
	return fmt.Errorf("bundle does not match the IR schema:\n  %s", strings.Join(lines, "\n  "))
}
