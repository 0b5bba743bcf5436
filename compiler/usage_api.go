package compiler

import (
	"time"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// srcUsageAPI is a provider's usage_api block (schema/policy.cue).
type srcUsageAPI struct {
	KeyID       *string  `json:"key_id"`
	WorkspaceID *string  `json:"workspace_id"`
	API         *string  `json:"api"`
	AdminKeyEnv *string  `json:"admin_key_env"`
	SettleDelay *string  `json:"settle_delay"`
	Tolerance   *float64 `json:"tolerance"`
}

// checkUsageAPI checks that a usage API named is read with an admin key
// named by its variable (the admin key in the policy is refused as a
// credential would be), and that the settle delay is a duration.
func (c *compiler) checkUsageAPI(at cue.Path, p srcProvider) {
	u := p.UsageAPI
	if u == nil {
		return
	}
	if (u.API == nil) != (u.AdminKeyEnv == nil) {
		c.errorf(at, "api and admin_key_env go together: the usage API is read with its admin key")
	}
	if u.API != nil {
		enum(c, sub(at, "api"), "api", *u.API, []string{plan.UsageAPIOpenAI, plan.UsageAPIAnthropic})
		if p.BaseURL == nil {
			c.errorf(sub(at, "api"), "the usage API is read at the provider's base_url, and a pool-backed provider has none")
		}
	}
	if env := u.AdminKeyEnv; env != nil {
		if why, secret := valueLooksSecret(*env); secret {
			c.errorf(sub(at, "admin_key_env"), "%s; admin_key_env names the environment variable that holds the admin key, not the key itself", why)
		} else if !envName.MatchString(*env) {
			c.errorf(sub(at, "admin_key_env"), "must name an environment variable (letters, digits and _, not starting with a digit), not hold the admin key itself")
		}
	}
	if s := u.SettleDelay; s != nil {
		if d, err := time.ParseDuration(*s); err != nil || d < 0 {
			c.errorf(sub(at, "settle_delay"), "%q is not a duration of 0 or more (e.g. \"24h\")", *s)
		}
	}
}

// buildUsageAPI renders a usage_api block for the graph; the schema's
// defaults have filled settle_delay and tolerance.
func buildUsageAPI(u *srcUsageAPI) *plan.UsageAPI {
	if u == nil {
		return nil
	}
	out := &plan.UsageAPI{KeyID: deref(u.KeyID), WorkspaceID: deref(u.WorkspaceID), API: deref(u.API), AdminKeyEnv: deref(u.AdminKeyEnv), SettleDelayMS: millis(u.SettleDelay)}
	if u.Tolerance != nil {
		out.Tolerance = *u.Tolerance
	}
	return out
}
