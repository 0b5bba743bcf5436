package compiler

import (
	"fmt"
	"sort"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// The operator's document decoded into Go, defaults applied. Positions are
// not carried here: every check knows the path of what it complains about,
// and the loaded value answers where that path was written (loaded.at).

type source struct {
	Providers      map[string]srcProvider `json:"providers"`
	Pools          map[string]srcPool     `json:"pools"`
	Primary        map[string]string      `json:"primary"`
	Overlays       map[string]srcOverlay  `json:"overlays"`
	MCPServers     map[string]srcService  `json:"mcp_servers"`
	Agents         map[string]srcService  `json:"agents"`
	ClaimMaxAge    int                    `json:"claim_max_age_days"`
	OnFidelityLoss plan.LossAction        `json:"on_fidelity_loss"`
	Profiles       map[string]srcProfile  `json:"profiles"`
	Keys           []srcKey               `json:"keys"`
	Budgets        []srcBudget            `json:"budgets"`
	AccessRules    []srcRule              `json:"access_rules"`
}

type srcProvider struct {
	BaseURL       *string               `json:"base_url"`
	Pool          *string               `json:"pool"`
	CredentialEnv *string               `json:"credential_env"`
	Auth          *plan.AuthScheme      `json:"auth"`
	Headers       map[string]string     `json:"headers"`
	Query         map[string]string     `json:"query"`
	TLS           *srcTLS               `json:"tls"`
	Models        map[string]srcModel   `json:"models"`
	Aliases       map[string]string     `json:"aliases"`
	Channels      map[string]srcChannel `json:"channels"`
	Retries       *srcRetries           `json:"retries"`
	Timeout       *string               `json:"timeout"`
	Failover      *srcFailover          `json:"failover"`
	Circuit       *srcCircuit           `json:"circuit"`
	StreamUsage   bool                  `json:"stream_usage"`
	UsageAPI      *srcUsageAPI          `json:"usage_api"`
}

type srcModel struct {
	MaxTokens int64    `json:"max_tokens"`
	Routes    []string `json:"routes"`
}

type srcChannel struct {
	Dialect       string            `json:"dialect"`
	Tier          string            `json:"tier"`
	BaseURL       *string           `json:"base_url"`
	CredentialEnv *string           `json:"credential_env"`
	Auth          *plan.AuthScheme  `json:"auth"`
	Headers       map[string]string `json:"headers"`
	Query         map[string]string `json:"query"`
	Models        []string          `json:"models"`
	Routes        []string          `json:"routes"`
	Preserves     []string          `json:"preserves"`
	VerifiedAt    *string           `json:"verified_at"`
	VerifiedBy    *string           `json:"verified_by"`
	Origin        *string           `json:"origin"`
}

type srcOverlay struct {
	Claims map[string]map[string]srcClaim `json:"claims"`
}

type srcClaim struct {
	Preserves  []string          `json:"preserves"`
	VerifiedAt string            `json:"verified_at"`
	VerifiedBy string            `json:"verified_by"`
	Evidence   map[string]string `json:"evidence"`
}

type srcTLS struct {
	CAFile     *string `json:"ca_file"`
	CertFile   *string `json:"cert_file"`
	KeyFile    *string `json:"key_file"`
	ServerName *string `json:"server_name"`
}

type srcRetries struct {
	Max     int                 `json:"max"`
	Backoff *string             `json:"backoff"`
	On      []plan.FailureClass `json:"on"`
}

type srcFailover struct {
	To []string            `json:"to"`
	On []plan.FailureClass `json:"on"`
}

type srcCircuit struct {
	Failures       int    `json:"failures"`
	CoolDown       string `json:"cool_down"`
	HalfOpenProbes int    `json:"half_open_probes"`
}

type srcPool struct {
	DNS     string               `json:"dns"`
	Scheme  string               `json:"scheme"`
	Picker  *string              `json:"picker"`
	Subsets map[string]srcSubset `json:"subsets"`
	// The picker's transport and failure mode; see #Pool.
	PickerCA        *string `json:"picker_ca"`
	PickerPlaintext *bool   `json:"picker_plaintext"`
	PickerTimeout   *string `json:"picker_timeout"`
	PickerFailure   *string `json:"picker_failure"`
}

type srcSubset struct {
	DNS string `json:"dns"`
}

type srcProfile struct {
	AllowedModels  []string         `json:"allowed_models"`
	RequireCaps    []string         `json:"require_caps"`
	PoolSubset     *string          `json:"pool_subset"`
	OnFidelityLoss *plan.LossAction `json:"on_fidelity_loss"`
	AccessRules    []srcRule        `json:"access_rules"`
	Budgets        []string         `json:"budgets"`
	MCPServers     []string         `json:"mcp_servers"`
	Agents         []string         `json:"agents"`
	AgentBudgets   []string         `json:"agent_budgets"`
}

// srcService is an MCP server or an A2A agent (CostPerCall is an agent's).
type srcService struct {
	URL           string            `json:"url"`
	CredentialEnv *string           `json:"credential_env"`
	Auth          *plan.AuthScheme  `json:"auth"`
	Headers       map[string]string `json:"headers"`
	TLS           *srcTLS           `json:"tls"`
	Timeout       *string           `json:"timeout"`
	CostPerCall   uint64            `json:"cost_per_call"`
}

type srcKey struct {
	Name    string `json:"name"`
	Profile string `json:"profile"`
	Hash    string `json:"hash"`
}

type srcBudget struct {
	Name   string           `json:"name"`
	Limit  uint64           `json:"limit"`
	Window plan.Window      `json:"window"`
	Per    plan.BucketScope `json:"per"`
	Cost   struct {
		Type plan.CostType `json:"type"`
		CEL  *string       `json:"cel"`
	} `json:"cost"`
	CostPerCall    uint64 `json:"cost_per_call"`
	CostPerSession uint64 `json:"cost_per_session"`
}

type srcRule struct {
	Name    string `json:"name"`
	When    string `json:"when"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// decode reads the unified value into a source. The shape check has run,
// so a failure here is a bug in the schema, not in the policy.
func (l *loaded) decode() (*source, error) {
	var src source
	if err := l.unified.Decode(&src); err != nil {
		return nil, fmt.Errorf("decoding the policy: %w", err)
	}
	return &src, nil
}

// at is where the value at path was written: the literal for a scalar,
// the label for a struct or list; for a value the operator left to a
// default, the nearest enclosing field they did write.
func (l *loaded) at(path cue.Path) Pos {
	sels := path.Selectors()
	for n := len(sels); n >= 0; n-- {
		v := l.inst.LookupPath(cue.MakePath(sels[:n]...))
		if !v.Exists() {
			continue
		}
		if n == len(sels) {
			return l.pos(valuePos(v))
		}
		return l.pos(labelPos(v))
	}
	return Pos{}
}

// label is where the field at path is named.
func (l *loaded) label(path cue.Path) Pos {
	if v := l.inst.LookupPath(path); v.Exists() {
		return l.pos(labelPos(v))
	}
	return l.at(path)
}

// path builds a cue.Path from field names (string) and list indexes (int).
func path(elems ...any) cue.Path {
	sels := make([]cue.Selector, len(elems))
	for i, e := range elems {
		switch e := e.(type) {
		case string:
			sels[i] = cue.Str(e)
		case int:
			sels[i] = cue.Index(e)
		default:
			panic(fmt.Sprintf("path element %v of type %T", e, e))
		}
	}
	return cue.MakePath(sels...)
}

// sortedKeys returns a map's keys in order: everything the compiler emits
// iterates in sorted order so the output is byte-identical run to run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
