// Package schema embeds the CUE definitions every policy is unified with and
// the JSON Schema of the compiled decision graph.
package schema

import _ "embed"

// PolicyCUE is the CUE source defining #Policy.
//
//go:embed policy.cue
var PolicyCUE []byte
