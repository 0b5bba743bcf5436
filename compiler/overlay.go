package compiler

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// An overlay is a named set of claims, each replacing a provider_compat
// channel's claim wholesale without editing the file or preset that made
// it, so two claims about one channel are layers, never a CUE conflict.
// For each channel the layers are ordered by verified_at, then by overlay
// name, with the catalog's own claim below every overlay of its date; the
// last one wins and the rest are what it overrode.

// overlayName is what an overlay may be called: its name is the winning
// claim's origin, which every answer carries in a response header.
var overlayName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// layer is one claim on a channel and where its date is written.
type layer struct {
	claim plan.Claim
	date  cue.Path
}

// checkOverlays checks every overlay's claims as a channel's own are
// checked; whether the channels they name exist is resolve's to say.
func (c *compiler) checkOverlays() {
	for _, name := range sortedKeys(c.src.Overlays) {
		if !overlayName.MatchString(name) {
			c.labelErrorf(path("overlays", name), "overlay name %q must be letters, digits, '.', '_' and '-' (it is the claim's origin, sent in the Pistra-Channel-Origin header)", name)
		}
		claims := c.src.Overlays[name].Claims
		for _, prov := range sortedKeys(claims) {
			for _, ch := range sortedKeys(claims[prov]) {
				at := func(f string) cue.Path { return path("overlays", name, "claims", prov, ch, f) }
				cl := claims[prov][ch]
				c.caps(at("preserves"), cl.Preserves)
				c.claimDate(at("verified_at"), cl.VerifiedAt)
				if strings.TrimSpace(cl.VerifiedBy) == "" {
					c.errorf(at("verified_by"), "a claim must cite its source: the page or probe it was read from")
				} else {
					c.textSecret(at("verified_by"), "verified_by", cl.VerifiedBy, "shown to API clients with the claim")
				}
			}
		}
	}
}

// overlayLayers indexes the overlays' claims by provider and channel, each
// channel's in overlay name order, and reports claims on channels that
// have no claim to override: unknown ones, and native ones.
func (c *compiler) overlayLayers() map[[2]string][]layer {
	out := map[[2]string][]layer{}
	for _, name := range sortedKeys(c.src.Overlays) {
		claims := c.src.Overlays[name].Claims
		for _, prov := range sortedKeys(claims) {
			p, ok := c.src.Providers[prov]
			if !ok {
				known := sortedKeys(c.src.Providers)
				c.labelErrorf(path("overlays", name, "claims", prov), "overlay %q claims for provider %q, which the catalog does not declare (providers: %s)%s",
					name, prov, listOf(known), didYouMean(prov, known))
				continue
			}
			for _, ch := range sortedKeys(claims[prov]) {
				at := path("overlays", name, "claims", prov, ch)
				if !c.overridable(at, name, prov, ch, p) {
					continue
				}
				cl := claims[prov][ch]
				out[[2]string{prov, ch}] = append(out[[2]string{prov, ch}], layer{
					claim: plan.Claim{Preserves: capSet(cl.Preserves), Origin: "overlay:" + name, VerifiedAt: cl.VerifiedAt, VerifiedBy: cl.VerifiedBy},
					date:  sub(at, "verified_at"),
				})
			}
		}
	}
	return out
}

// overridable reports whether overlay name may claim channel ch of
// provider prov: the channel exists and carries a claim.
func (c *compiler) overridable(at cue.Path, name, prov, ch string, p srcProvider) bool {
	decl, ok := p.Channels[ch]
	var compat []string
	for _, n := range sortedKeys(p.Channels) {
		if p.Channels[n].Tier == string(plan.TierProviderCompat) {
			compat = append(compat, n)
		}
	}
	switch {
	case !ok:
		c.labelErrorf(at, "overlay %q claims for channel %q of provider %q, which declares no such channel (its provider_compat channels: %s)%s; "+
			"an overlay replaces a claim, so the channel (dialect, tier, routes) is declared in the catalog first",
			name, ch, prov, listOf(compat), didYouMean(ch, compat))
	case decl.Tier == string(plan.TierNative):
		c.labelErrorf(at, "overlay %q claims for channel %q of provider %q, which is native: a native channel keeps every capability and has no claim to override",
			name, ch, prov)
	default:
		return true
	}
	return false
}

// winningClaim layers a compat channel's own claim (base) under the
// overlays' claims on it and returns the one that wins with the ones it
// overrode, next in line first. A winner older than claim_max_age_days
// is a warning at its date.
func (c *compiler) winningClaim(prov, ch string, base layer, overlays []layer) (plan.Claim, []plan.Claim) {
	layers := ordered(base, overlays)
	win := layers[len(layers)-1]
	var overrode []plan.Claim
	for i := len(layers) - 2; i >= 0; i-- {
		overrode = append(overrode, layers[i].claim)
	}
	c.warnStale(prov, ch, win)
	return win.claim, overrode
}

// ordered layers a channel's own claim under the overlays' claims on it
// (given in name order), the winner last. Stable: among claims of one date
// the base stays first and the overlays keep their name order.
func ordered(base layer, overlays []layer) []layer {
	layers := append([]layer{base}, overlays...)
	slices.SortStableFunc(layers, func(a, b layer) int { return strings.Compare(a.claim.VerifiedAt, b.claim.VerifiedAt) })
	return layers
}

// warnStale reports a winning claim verified more than claim_max_age_days
// ago: nobody announces the day a claim stops being true.
func (c *compiler) warnStale(prov, ch string, win layer) {
	d, err := time.Parse(isoDate, win.claim.VerifiedAt)
	if err != nil || c.src.ClaimMaxAge <= 0 || !d.AddDate(0, 0, c.src.ClaimMaxAge).Before(c.today) {
		return
	}
	c.warnf(win.date, "the claim on provider %q channel %q (%s) was verified on %s, more than claim_max_age_days (%d) ago: "+
		"read its source again (%s) or probe the channel, and date what you find in an overlay",
		prov, ch, win.claim.Origin, win.claim.VerifiedAt, c.src.ClaimMaxAge, win.claim.VerifiedBy)
}

// baseOrigin names who made a compat channel's own claim: its origin
// field, else the preset or the policy file where its date is written.
func (c *compiler) baseOrigin(prov, ch string, decl srcChannel) string {
	if decl.Origin != nil && *decl.Origin != "" {
		return *decl.Origin
	}
	p := c.l.inst.LookupPath(path("providers", prov, "channels", ch, "verified_at")).Pos()
	if !p.IsValid() {
		p = c.l.inst.LookupPath(path("providers", prov, "channels", ch)).Pos()
	}
	if preset := c.l.presetOf(p); preset != "" {
		return "preset:" + preset
	}
	return c.l.relName(p)
}
