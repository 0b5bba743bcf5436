package dialect

import "github.com/pistra/pistra/runtime/plan"

// Fidelity is the machine-readable part of a fidelity_loss refusal: the
// capabilities the request uses and, for every candidate that could have
// served it, what that candidate would drop and whose claim says so. A
// client can fix the request in one pass from it. OpenAI-dialect errors
// carry it as error.pistra; Anthropic-dialect errors spread its fields into
// error.details beside error_code.
type Fidelity struct {
	Used       plan.CapSet `json:"used"`
	Candidates []Candidate `json:"candidates"`
}

// Candidate names one way of serving a request as clients see it, in
// refusals and preflight answers alike.
type Candidate struct {
	Provider  string           `json:"provider"`
	Channel   string           `json:"channel"`
	Tier      plan.Tier        `json:"tier"`
	Model     string           `json:"model"`
	Translate plan.Translation `json:"translate,omitempty"`
	// Lost is what this candidate drops of what the request uses; absent
	// when it drops nothing.
	Lost plan.CapSet `json:"lost,omitempty"`
	// Origin, VerifiedAt and VerifiedBy are the provenance of the channel's
	// capability claim: who made it, on which day, read from which page.
	Origin     string `json:"origin"`
	VerifiedAt string `json:"verified_at,omitempty"`
	VerifiedBy string `json:"verified_by,omitempty"`
}
