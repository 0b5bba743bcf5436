// Package probe observes, from outside, which capabilities a provider's
// compatibility channel honours on the day it runs: a fixed, bounded set
// of small calls to the live endpoint (its base URL, its dialect, the
// credential its catalog entry names), each answer judged by what a black
// box can show (arguments and answers validated against their schemas,
// usage fields present, cache reads on a repeated prefix, the number of
// choices, audio and reasoning billed). The findings become an overlay
// claim (see Overlay) and, set against the channel's current claim, the
// regressions a scheduled job fails on.
//
// pistrac probe is the only user; nothing that serves requests imports it.
package probe

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// Target is one channel of a compiled catalog, resolved for probing as
// pistrad would dial it.
type Target struct {
	Provider, Channel string
	Dialect           plan.Dialect
	// BaseURL is the channel's, for the plan printed before any call.
	BaseURL string
	// CredentialEnv names the variable the credential was read from; ""
	// when the channel sends none.
	CredentialEnv string
	// Model is the upstream model the capability calls name.
	Model string
	// Claim is the channel's current claim: what it is said to preserve,
	// where it was made, since when and on whose word.
	Claim                          plan.CapSet
	Origin, VerifiedAt, VerifiedBy string
	// Routes are the routes the channel declares besides the one the
	// capability calls use, each with the model a call on it names ("" when
	// no plan sends the channel a model there).
	Routes []RouteModel

	up     *upstream.Upstream
	client *http.Client
}

// RouteModel is a declared route and the model a call on it names.
type RouteModel struct {
	Route plan.Route
	Model string
}

// NewTarget resolves channel of provider in g. model, when not empty, is
// the upstream model to call; otherwise the first (by name) that some plan
// sends the channel on its capability route. env looks the credential up.
func NewTarget(g *plan.Graph, provider, channel, model string, env func(string) (string, bool), timeout time.Duration) (*Target, error) {
	pi := slices.IndexFunc(g.Providers, func(p plan.Provider) bool { return p.Name == provider })
	if pi < 0 {
		return nil, fmt.Errorf("no provider %q in the catalog", provider)
	}
	p := g.Providers[pi]
	ci := slices.IndexFunc(p.Channels, func(c plan.Channel) bool { return c.Name == channel })
	if ci < 0 {
		return nil, fmt.Errorf("provider %q has no channel %q", provider, channel)
	}
	ch := p.Channels[ci]
	if err := probeable(&p, &ch); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", provider, channel, err)
	}
	t := &Target{Provider: provider, Channel: channel, Dialect: ch.Dialect, BaseURL: ch.BaseURL,
		CredentialEnv: p.ChannelCredentialEnv(ci), Model: model,
		Claim: ch.Preserves, Origin: ch.Origin, VerifiedAt: ch.VerifiedAt, VerifiedBy: ch.VerifiedBy}
	if t.BaseURL == "" {
		t.BaseURL = p.BaseURL
	}
	main := capabilityRoute(ch.Dialect)
	if t.Model == "" {
		t.Model = routeModel(g, pi, ci, main)
	}
	if t.Model == "" {
		return nil, fmt.Errorf("%s/%s: no plan sends it a model on %s: name one with -model", provider, channel, main)
	}
	for _, r := range ch.Routes {
		if r != main {
			t.Routes = append(t.Routes, RouteModel{Route: r, Model: routeModel(g, pi, ci, r)})
		}
	}
	// Resolved alone, the channel needs its own credential and no other's.
	p.Channels = []plan.Channel{ch}
	ups, err := upstream.Resolve(&plan.Graph{Providers: []plan.Provider{p}}, env)
	if err != nil {
		return nil, err
	}
	t.up = &ups[0]
	t.client = &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: t.up.TLS}}
	return t, nil
}

// probeable says why a channel cannot be probed, if it cannot.
func probeable(p *plan.Provider, ch *plan.Channel) error {
	switch {
	case ch.Tier != plan.TierProviderCompat:
		return fmt.Errorf("a %s channel keeps every capability by definition and carries no claim to probe", ch.Tier)
	case ch.BaseURL == "" && p.BaseURL == "":
		return errors.New("pool-backed: there is no one endpoint to probe")
	case !slices.Contains(ch.Routes, capabilityRoute(ch.Dialect)):
		return fmt.Errorf("capabilities are probed on %s, which the channel does not serve", capabilityRoute(ch.Dialect))
	}
	return nil
}

// capabilityRoute is where a dialect's capability calls go: the route every
// compatibility endpoint of it serves.
func capabilityRoute(d plan.Dialect) plan.Route {
	if d == plan.DialectAnthropic {
		return plan.RouteMessages
	}
	return plan.RouteChatCompletions
}

// routeModel is the first upstream model, by name, that a plan of g sends
// to channel ci of provider pi, untranslated, on route r; "" for none.
func routeModel(g *plan.Graph, pi, ci int, r plan.Route) string {
	var models []string
	for _, tb := range g.Tables {
		for _, e := range tb.Entries {
			if e.Route != r {
				continue
			}
			for _, c := range g.CandidateLists[g.Plans[e.Plan].Candidates] {
				if c.Provider == pi && c.Channel == ci && c.Translate == plan.TranslateNone {
					models = append(models, c.Model)
				}
			}
		}
	}
	if len(models) == 0 {
		return ""
	}
	return slices.Min(models)
}
