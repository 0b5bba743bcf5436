// Package bundle loads bundle.json, the portable form of the decision graph,
// and checks that a graph's cross-references hold, so that a runtime serving
// it never indexes out of range.
package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/schema"
)

// Load parses a bundle.json document: it is validated against the IR
// schema, decoded, verified, and its content checked against its digest. A
// bundle that fails any step is refused whole, so a caller swapping graphs
// keeps the old one. Signatures are checked by a Verifier, apart.
func Load(b []byte) (*plan.Graph, error) {
	if err := schema.ValidateIR(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var g plan.Graph
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("decoding bundle: %w", err)
	}
	if err := Verify(&g); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if err := CheckDigest(&g); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return &g, nil
}
