package compiler

import "github.com/pistra/pistra/runtime/plan"

// warnProviderAuth reports a provider-level auth that its channels of the
// other dialect inherit in place of their own dialect's default. Written
// for the provider's native channel (x-api-key on an Anthropic provider,
// where it is the default anyway), it also makes the OpenAI-compatible
// channel send x-api-key, which that endpoint refuses with a 401; bearer on
// an OpenAI-and-Anthropic provider likewise reaches the Anthropic channel.
// Only a provider with a channel the scheme is the default for is warned
// about: on one whose channels all speak the other dialect the scheme is
// plainly what its endpoint takes, and api-key (Azure's), the default of
// no dialect, is never warned about.
func (c *compiler) warnProviderAuth(name string, p srcProvider) {
	if p.Auth == nil {
		return
	}
	auth := *p.Auth
	native := false
	for _, ch := range p.Channels {
		native = native || plan.DefaultAuth(plan.Dialect(ch.Dialect)) == auth
	}
	if !native {
		return
	}
	for _, chName := range sortedKeys(p.Channels) {
		ch := p.Channels[chName]
		d := plan.Dialect(ch.Dialect)
		if ch.Auth != nil || plan.DefaultAuth(d) == auth {
			continue
		}
		c.warnf(path("providers", name, "auth"), "auth %q of provider %q also applies to its %s channel %q, which would otherwise send %q, "+
			"and %s endpoints refuse %q with a 401; set auth on the channels that need it instead, or auth: %q on channel %q if it really takes that",
			auth, name, d, chName, plan.DefaultAuth(d), d, auth, auth, chName)
	}
}
