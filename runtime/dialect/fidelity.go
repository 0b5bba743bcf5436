package dialect

import "github.com/pistra/pistra/runtime/plan"

// Fidelity is the machine-readable part of a fidelity_loss refusal: the
// capabilities the request uses and, for every candidate that could have
// served it, what that candidate would drop and whose claim says so. A
// client can fix the request in one pass from it. Both dialects carry it
// in error.pistra (see Data); Anthropic-dialect errors also spread it into
// error.details beside error_code, where it was first sent, until clients
// have moved to error.pistra.
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
	// Pool says which members a pooled candidate is sent to and how one is
	// chosen; nil for a candidate with a URL of its own.
	Pool *Pool `json:"pool,omitempty"`
}

// Pool is how a pooled candidate is dialled: the member set (the addresses
// DNS gives for Members, the pool's name or its subset's) and how the
// member of each attempt is chosen.
type Pool struct {
	Name   string `json:"name"`
	Subset string `json:"subset,omitempty"`
	// Members is the DNS name (host:port) whose addresses are the members.
	Members string `json:"members"`
	// Pick is PickPicker (the endpoint picker at Picker names the member,
	// checked against the set) or PickRoundRobin (the members in turn).
	Pick   string `json:"pick"`
	Picker string `json:"picker,omitempty"`
	// PickerFailure is what a picker that is down, slow (past
	// PickerTimeoutMS) or erring does: closed refuses the candidate, open
	// spreads the request over the members in turn.
	PickerFailure   plan.PickerFailure `json:"picker_failure,omitempty"`
	PickerTimeoutMS int64              `json:"picker_timeout_ms,omitempty"`
}

// How a pool's member is chosen (Pool.Pick).
const (
	PickPicker     = "picker"
	PickRoundRobin = "round_robin"
)

// Data is the machine-readable part of a refusal, sent as error.pistra in
// both dialects: a fidelity refusal's capabilities and candidates, or,
// when every candidate failed, what was done with each.
type Data struct {
	*Fidelity
	// Attempts lists, in the order walked, every candidate of a request
	// that none served: how each that was sent failed, and why each other
	// was passed over.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is what the attempt loop did with one candidate.
type Attempt struct {
	Provider string `json:"provider"`
	Channel  string `json:"channel"`
	Model    string `json:"model"`
	// Skipped is why the candidate was passed over untried (circuit_open,
	// budget_exceeded, provider_suspended, untranslatable_request, ...);
	// empty when it was sent.
	Skipped string `json:"skipped,omitempty"`
	// Status is the upstream's status on the last try, absent when none
	// came (connect, timeout).
	Status int `json:"status,omitempty"`
	// Failure is how the last try failed: connect, 5xx, 429, timeout or
	// invalid_response (an answer that could not be used).
	Failure string `json:"failure,omitempty"`
	// Retries is how many times the candidate was re-sent after its first
	// try.
	Retries int `json:"retries"`
	// RetryAfterMS is the shortest wait the upstream asked for, or, for a
	// candidate passed over, how long until it may be admitted.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
}

// Data is what e carries as error.pistra, nil when nothing.
func (e *Error) Data() *Data {
	if e.Fidelity == nil && e.Attempts == nil {
		return nil
	}
	return &Data{Fidelity: e.Fidelity, Attempts: e.Attempts}
}
