package testkit

// ProbeCredentialEnv is the variable ProbePolicy's provider reads its
// credential from.
const ProbeCredentialEnv = "PISTRA_PROBE_TEST_KEY"

// ProbeKey is the client key of ProbePolicy's one key.
const ProbeKey = "sk-probe-client"

// ProbePolicy is a policy for probing: one provider, "vendor", at baseURL,
// reachable only through its provider_compat channel "compat" of dialect,
// serving "vendor-large" on chat completions and responses (openai) or
// messages (anthropic), and claiming keeps, verified on 2026-11-20 by
// VendorVerifiedBy. One profile and one key reach it.
func ProbePolicy(dialect, baseURL string, keeps ...string) Policy {
	routes := []string{"chat_completions", "responses"}
	if dialect == "anthropic" {
		routes = []string{"messages"}
	}
	return Policy{
		Providers: map[string]Provider{"vendor": {
			BaseURL: baseURL, CredentialEnv: ProbeCredentialEnv,
			Models: map[string]Model{"vendor-large": {MaxTokens: 4096}},
			Channels: map[string]Channel{"compat": {Dialect: dialect, Tier: "provider_compat", Routes: routes,
				Preserves: Keeps(keeps...), VerifiedAt: "2026-11-20", VerifiedBy: VendorVerifiedBy}},
		}},
		Profiles: map[string]Profile{"default": {}},
		Keys:     []Key{{Name: "probe", Profile: "default", Secret: ProbeKey}},
	}
}
