package translate

import (
	"strings"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/version"
)

// Claim is who vouches for what a translated candidate preserves: this
// pistra build's translator for the pair, whose losses tests hold it to
// plan.TranslationLosses. Clients see it as the claim's verified_by, so it
// names the product and its version, e.g. "pistra v1.4.0 translator
// (openai→anthropic)".
func Claim(t plan.Translation) string {
	in, out, _ := strings.Cut(string(t), "_")
	return "pistra " + version.String() + " translator (" + in + "→" + out + ")"
}
