package testkit

import "github.com/pistra/pistra/runtime/plan"

// Provenance of the compat channel's claim that CompatAndNative adds.
const (
	VendorOrigin     = "overlays/vendor.cue"
	VendorVerifiedBy = "https://vendor.example/docs/openai-compat"
)

// CompatAndNative adds the two providers fidelity selection chooses
// between, and returns the candidate of each: "vendor", whose compat
// channel on chat keeps structured output only (its claim from
// VendorOrigin, verified by VendorVerifiedBy) and is the primary, and
// "oa", native on routes, keeping everything.
func (b *GraphBuilder) CompatAndNative(routes ...plan.Route) (compat, native plan.Candidate) {
	kept := plan.Of(plan.CapStructuredOutput)
	vendor := b.Provider(plan.Provider{Name: "vendor", BaseURL: "http://vendor.test/v1", Pool: -1, Auth: "bearer", Channels: []plan.Channel{{
		Name: "openai-compat", Dialect: plan.DialectOpenAI, Tier: plan.TierProviderCompat, Routes: []plan.Route{plan.RouteChatCompletions},
		Preserves: kept, Origin: VendorOrigin, VerifiedAt: "2026-11-20", VerifiedBy: VendorVerifiedBy}}})
	oa := b.Provider(plan.Provider{Name: "oa", BaseURL: "http://oa.test/v1", Pool: -1, Auth: "bearer", Channels: []plan.Channel{{
		Name: "native", Dialect: plan.DialectOpenAI, Tier: plan.TierNative, Routes: routes,
		Preserves: plan.AllCaps, Origin: "native"}}})
	compat = plan.Candidate{Provider: vendor, Channel: 0, Tier: plan.TierProviderCompat, Model: "vendor-large",
		Preserves: kept, Origin: VendorOrigin, Primary: true}
	native = plan.Candidate{Provider: oa, Channel: 0, Tier: plan.TierNative, Model: "gpt-4o",
		Preserves: plan.AllCaps, Origin: "native"}
	return compat, native
}
