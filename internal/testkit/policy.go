package testkit

import (
	"bytes"
	"encoding/json"
)

// Policy is a pistra policy (catalog and policy in one) as Go values, for
// tests that compile one: each test states what its policy holds, from
// shared provider blocks and its own changes to them, instead of copying
// CUE text and filling placeholders in it. Source writes it as the CUE
// the compiler reads. Only what the tests use is here; the compiler reads
// every member into maps, so order is not part of a policy.
type Policy struct {
	Providers   map[string]Provider
	Pools       map[string]Pool
	MCPServers  map[string]Service
	Agents      map[string]Service
	Primary     map[string]string // public name → provider
	AccessRules []Rule            // deployment-wide
	Profiles    map[string]Profile
	Keys        []Key
	Budgets     []Budget
}

// Provider is one entry of providers.
type Provider struct {
	BaseURL       string             `json:"base_url,omitempty"`
	Pool          string             `json:"pool,omitempty"` // instead of BaseURL
	CredentialEnv string             `json:"credential_env,omitempty"`
	Auth          string             `json:"auth,omitempty"`
	Headers       map[string]string  `json:"headers,omitempty"`
	TLS           *TLS               `json:"tls,omitempty"`
	Models        map[string]Model   `json:"models"`
	Aliases       map[string]string  `json:"aliases,omitempty"`
	Channels      map[string]Channel `json:"channels"`
	Retries       *Retries           `json:"retries,omitempty"`
	Timeout       string             `json:"timeout,omitempty"`
	Failover      *Failover          `json:"failover,omitempty"`
	Circuit       *Circuit           `json:"circuit,omitempty"`
	UsageAPI      *UsageAPI          `json:"usage_api,omitempty"`
}

// Service is one entry of mcp_servers or agents; CostPerCall is an
// agent's (nil: the default).
type Service struct {
	URL           string            `json:"url"`
	CredentialEnv string            `json:"credential_env,omitempty"`
	Auth          string            `json:"auth,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	TLS           *TLS              `json:"tls,omitempty"`
	Timeout       string            `json:"timeout,omitempty"`
	CostPerCall   *uint64           `json:"cost_per_call,omitempty"`
}

// UsageAPI is a provider's usage_api block: the ids its usage API groups
// its traffic by.
type UsageAPI struct {
	KeyID       string `json:"key_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
}

// Pool is one entry of pools.
type Pool struct {
	DNS             string            `json:"dns"`
	Picker          string            `json:"picker,omitempty"`
	PickerPlaintext bool              `json:"picker_plaintext,omitempty"`
	PickerTimeout   string            `json:"picker_timeout,omitempty"`
	PickerFailure   string            `json:"picker_failure,omitempty"`
	Subsets         map[string]Subset `json:"subsets,omitempty"`
}

// Subset is one entry of a pool's subsets.
type Subset struct {
	DNS string `json:"dns"`
}

// TLS is a provider's tls block: files, never inlined certificates.
type TLS struct {
	CAFile   string `json:"ca_file,omitempty"`
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
}

// Model is one entry of a provider's models.
type Model struct {
	MaxTokens int64 `json:"max_tokens,omitempty"`
}

// Channel is one entry of a provider's channels. Preserves is nil when
// the channel declares none (a native one must not) and points at a list,
// possibly empty, when it declares what it keeps.
type Channel struct {
	Dialect    string            `json:"dialect"`
	Tier       string            `json:"tier"`
	Auth       string            `json:"auth,omitempty"`
	Routes     []string          `json:"routes,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Preserves  *[]string         `json:"preserves,omitempty"`
	VerifiedAt string            `json:"verified_at,omitempty"`
	VerifiedBy string            `json:"verified_by,omitempty"`
	Origin     string            `json:"origin,omitempty"`
}

// Keeps is a compat channel's preserves list: caps, or an explicit
// empty list when there are none.
func Keeps(caps ...string) *[]string {
	list := append([]string{}, caps...)
	return &list
}

// Retries is a provider's retries block.
type Retries struct {
	Max     int      `json:"max"`
	Backoff string   `json:"backoff,omitempty"`
	On      []string `json:"on,omitempty"`
}

// Failover is a provider's failover block.
type Failover struct {
	To []string `json:"to"`
	On []string `json:"on,omitempty"`
}

// Circuit is a provider's circuit block.
type Circuit struct {
	Failures int    `json:"failures"`
	CoolDown string `json:"cool_down,omitempty"`
}

// Profile is one entry of profiles; the zero value is a profile with no
// limits ({}).
type Profile struct {
	AllowedModels  []string `json:"allowed_models,omitempty"`
	RequireCaps    []string `json:"require_caps,omitempty"`
	OnFidelityLoss string   `json:"on_fidelity_loss,omitempty"`
	AccessRules    []Rule   `json:"access_rules,omitempty"`
	Budgets        []string `json:"budgets,omitempty"`
	PoolSubset     string   `json:"pool_subset,omitempty"`
	MCPServers     []string `json:"mcp_servers,omitempty"`
	Agents         []string `json:"agents,omitempty"`
	AgentBudgets   []string `json:"agent_budgets,omitempty"`
}

// Rule is an access rule, deployment-wide or a profile's.
type Rule struct {
	Name    string `json:"name"`
	When    string `json:"when"`
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Key is a client key: the policy holds only Secret's hash (HashKey).
type Key struct {
	Name, Profile, Secret string
}

// MarshalJSON writes the key as the policy stores it, hashed.
func (k Key) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name    string `json:"name"`
		Profile string `json:"profile"`
		Hash    string `json:"hash"`
	}{k.Name, k.Profile, HashKey(k.Secret)})
}

// Budget is one entry of budgets.
type Budget struct {
	Name   string `json:"name"`
	Limit  uint64 `json:"limit"`
	Window string `json:"window"`
	Per    string `json:"per,omitempty"`
	Cost   Cost   `json:"cost"`
	// CostPerCall is what one MCP call draws (nil: the default, 1).
	CostPerCall *uint64 `json:"cost_per_call,omitempty"`
}

// Cost is a budget's cost: a type, and the expression when it is CEL.
type Cost struct {
	Type string `json:"type"`
	CEL  string `json:"cel,omitempty"`
}

// Source is the policy as a CUE file of package pistra: each top-level
// member a field whose value is written as JSON, which is CUE.
func (p Policy) Source() []byte {
	var b bytes.Buffer
	b.WriteString("package pistra\n")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // CEL's && stays readable
	enc.SetIndent("", "\t")
	for _, f := range []struct {
		name  string
		value any
		set   bool
	}{
		{"providers", p.Providers, true},
		{"pools", p.Pools, len(p.Pools) > 0},
		{"mcp_servers", p.MCPServers, len(p.MCPServers) > 0},
		{"agents", p.Agents, len(p.Agents) > 0},
		{"primary", p.Primary, len(p.Primary) > 0},
		{"access_rules", p.AccessRules, len(p.AccessRules) > 0},
		{"profiles", p.Profiles, len(p.Profiles) > 0},
		{"keys", p.Keys, len(p.Keys) > 0},
		{"budgets", p.Budgets, len(p.Budgets) > 0},
	} {
		if f.set {
			b.WriteString("\n" + f.name + ": ")
			_ = enc.Encode(f.value) // strings, numbers, maps of them: cannot fail
		}
	}
	return b.Bytes()
}
