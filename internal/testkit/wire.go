package testkit

import "strings"

// Preflight is a preflight answer as a client reads it off the wire.
type Preflight struct {
	Performed      bool     `json:"performed"`
	Note           string   `json:"note"`
	Route          string   `json:"route"`
	Profile        string   `json:"profile"`
	Key            string   `json:"key"`
	RequireCaps    []string `json:"require_caps"`
	OnFidelityLoss string   `json:"on_fidelity_loss"`
	Capabilities   struct {
		Read bool     `json:"read"`
		Used []string `json:"used"`
	} `json:"capabilities"`
	Serve        WireCandidate   `json:"serve"`
	Lossy        bool            `json:"lossy"`
	AttemptOrder []WireCandidate `json:"attempt_order"`
	PassedOver   []WireCandidate `json:"passed_over"`
	Skipped      []struct {
		Provider string   `json:"provider"`
		Channel  string   `json:"channel"`
		Reason   string   `json:"reason"`
		Missing  []string `json:"missing"`
	} `json:"skipped"`
}

// SkipReasons renders the static skips as provider/channel:reason[missing].
func (p Preflight) SkipReasons() string {
	var out []string
	for _, s := range p.Skipped {
		out = append(out, s.Provider+"/"+s.Channel+":"+s.Reason+"["+strings.Join(s.Missing, ",")+"]")
	}
	return strings.Join(out, " ")
}

// WireCandidate is one candidate as pistra describes it on the wire, in a
// preflight answer and in a fidelity refusal alike.
type WireCandidate struct {
	Provider   string   `json:"provider"`
	Channel    string   `json:"channel"`
	Tier       string   `json:"tier"`
	Model      string   `json:"model"`
	Lost       []string `json:"lost"`
	Origin     string   `json:"origin"`
	VerifiedAt string   `json:"verified_at"`
	VerifiedBy string   `json:"verified_by"`
	// Pool is set for a pooled candidate.
	Pool *WirePool `json:"pool"`
}

// WirePool is how a pooled candidate is dialled, as pistra describes it.
type WirePool struct {
	Name            string `json:"name"`
	Subset          string `json:"subset"`
	Members         string `json:"members"`
	Pick            string `json:"pick"`
	Picker          string `json:"picker"`
	PickerFailure   string `json:"picker_failure"`
	PickerTimeoutMS int64  `json:"picker_timeout_ms"`
}
