package deps

import (
	_ "cel.dev/cel-go/cel"
	_ "cuelang.org/go/cue"
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/dave/jennifer/jen"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
)
