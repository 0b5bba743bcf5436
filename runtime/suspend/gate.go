package suspend

import (
	"cmp"
	"net/http"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// ReasonProviderSuspended labels a candidate passed over because its
// provider is suspended.
const ReasonProviderSuspended = "provider_suspended"

// Gate enforces the suspensions in Store on the request path; with no
// Store (a gateway without a ledger) nothing is suspended.
type Gate struct{ Store Store }

var _ admission.Gate = Gate{}

// Admit refuses the candidates of suspended providers: the whole request
// when the provider is its primary (a suspended provider is not quietly
// replaced by its failover list), else just the candidate.
func (g Gate) Admit(r *admission.Request, c *plan.Candidate) (admission.Ticket, *admission.Refusal) {
	if g.Store == nil {
		return admission.NothingHeld, nil
	}
	name := r.Graph.Providers[c.Provider].Name
	s, ok := g.Store.Suspended(KindProvider, name)
	if !ok {
		return admission.NothingHeld, nil
	}
	e := dialect.Errorf(http.StatusServiceUnavailable, dialect.CodeProviderSuspended,
		"provider %q is suspended: %s", name, cmp.Or(s.Reason, "no reason given"))
	// x-should-retry: false: a suspension stands until an operator lifts
	// it, and an SDK's retries within seconds would only be refused again.
	e.Final = true
	return nil, &admission.Refusal{Reason: ReasonProviderSuspended, Final: c.Primary, Error: e}
}

// Key refuses the key named name when it is suspended; nil otherwise.
func (g Gate) Key(name string) *dialect.Error {
	if g.Store == nil {
		return nil
	}
	s, ok := g.Store.Suspended(KindKey, name)
	if !ok {
		return nil
	}
	return dialect.Errorf(http.StatusForbidden, dialect.CodeKeySuspended, "the API key is suspended: %s",
		cmp.Or(s.Reason, "no reason given"))
}
