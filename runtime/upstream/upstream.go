// Package upstream resolves a policy's providers for serving: each
// provider's credential read from the environment, its static headers, its
// retry and failover policy as bit sets, what its translated candidates
// need, and the URL of every (channel, route) it serves, built once per
// snapshot so no request parses a URL or reads the environment.
package upstream

import (
	"fmt"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// Upstream is a provider resolved for serving: its credential read from the
// environment, its static headers, its retry and failover policy as
// bitmasks, and the URL of every (channel, route) it serves, built once per
// snapshot so no request parses a URL.
type Upstream struct {
	Name string
	// NameHeader is Name as a header value, shared by every response.
	NameHeader []string
	// modelHeaders holds each model's name as a header value, likewise.
	modelHeaders map[string][]string
	// Retry is the same-provider retry policy.
	Retry Retry
	// Timeout bounds the wait for the response headers, then every gap
	// in the body; 0 for none.
	Timeout time.Duration
	// FailoverOn is what moves the request to the next provider, and
	// FailoverTo where it goes, in order (provider indexes).
	FailoverOn Classes
	FailoverTo []int
	// authKey/authValue present the provider's credential; authKey is ""
	// when the provider takes none. authValue is a secret: never log it.
	authKey   string
	authValue []string
	headers   []plan.Header // canonical names
	// urls[channel][route index] is nil where the channel does not serve
	// the route or the provider has no base URL of its own (pools).
	urls [][]*url.URL
	// anthropicVersion is the provider's static anthropic-version header,
	// maxTokens each model's default max_tokens, and streamUsage the
	// policy's stream_usage; translated candidates read them (see
	// translated.go).
	anthropicVersion string
	maxTokens        map[string]int64
	streamUsage      bool
}

// Retry is a provider's same-provider retry policy.
type Retry struct {
	// Max is how many times an attempt is re-sent.
	Max int
	On  Classes
	// Backoff is the first wait, doubled per retry.
	Backoff time.Duration
}

// Resolve prepares every provider of g. env looks credentials up (os.LookupEnv
// in pistrad); a provider whose variable is unset or empty is an error that
// names both, so a bad deployment fails at start-up or reload, not on the
// first request.
func Resolve(g *plan.Graph, env func(string) (string, bool)) ([]Upstream, error) {
	ups := make([]Upstream, len(g.Providers))
	for i := range g.Providers {
		if err := ups[i].resolve(&g.Providers[i], env); err != nil {
			return nil, fmt.Errorf("provider %q: %w", g.Providers[i].Name, err)
		}
	}
	return ups, nil
}

func (u *Upstream) resolve(p *plan.Provider, env func(string) (string, bool)) error {
	u.Name, u.NameHeader = p.Name, []string{p.Name}
	if err := u.resolveAuth(p, env); err != nil {
		return err
	}
	for _, h := range p.Headers {
		u.headers = append(u.headers, plan.Header{Name: textproto.CanonicalMIMEHeaderKey(h.Name), Value: h.Value})
	}
	u.resolveTranslation(p)
	u.modelHeaders = make(map[string][]string, len(p.Models))
	for _, m := range p.Models {
		u.modelHeaders[m.Name] = []string{m.Name}
	}
	var err error
	if u.Retry.On, err = parseClasses(p.Retry.On); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	if u.FailoverOn, err = parseClasses(p.Failover.On); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	u.FailoverTo = p.Failover.To
	u.Retry.Max = p.Retry.Max
	u.Retry.Backoff = time.Duration(p.Retry.BackoffMS) * time.Millisecond
	u.Timeout = time.Duration(p.TimeoutMS) * time.Millisecond
	u.urls = make([][]*url.URL, len(p.Channels))
	for ci := range p.Channels {
		if u.urls[ci], err = channelURLs(p, &p.Channels[ci]); err != nil {
			return fmt.Errorf("channel %q: %w", p.Channels[ci].Name, err)
		}
	}
	return nil
}

func (u *Upstream) resolveAuth(p *plan.Provider, env func(string) (string, bool)) error {
	if p.CredentialEnv == "" {
		return nil
	}
	secret, ok := env(p.CredentialEnv)
	if !ok || secret == "" {
		return fmt.Errorf("credential variable %s is not set", p.CredentialEnv)
	}
	switch p.Auth {
	case plan.AuthBearer, "":
		u.authKey, u.authValue = "Authorization", []string{"Bearer " + secret}
	case plan.AuthXAPIKey:
		u.authKey, u.authValue = "X-Api-Key", []string{secret}
	case plan.AuthAPIKey:
		u.authKey, u.authValue = "Api-Key", []string{secret}
	default:
		return fmt.Errorf("unknown auth scheme %q (known: %s)", p.Auth, strings.Join(plan.Names(plan.AuthSchemes), ", "))
	}
	return nil
}

// channelURLs builds the URL of every route the channel serves, with the
// provider's static query parameters.
func channelURLs(p *plan.Provider, ch *plan.Channel) ([]*url.URL, error) {
	out := make([]*url.URL, len(plan.Routes))
	base := ch.BaseURL
	if base == "" {
		base = p.BaseURL
	}
	if base == "" {
		return out, nil // pool-backed: no fixed URL to dial
	}
	var query string
	if len(p.Query) > 0 {
		q := url.Values{}
		for _, kv := range p.Query {
			q.Add(kv.Name, kv.Value)
		}
		query = q.Encode()
	}
	for _, r := range ch.Routes {
		path := r.UpstreamPath()
		if path == "" {
			return nil, fmt.Errorf("unknown route %q", r)
		}
		u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
		if err != nil {
			return nil, fmt.Errorf("base URL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("base URL %q is not an absolute http(s) URL", base)
		}
		u.RawQuery = query
		out[routeIndex(r)] = u
	}
	return out, nil
}

// URL is where candidate c is sent for a request that arrived on inbound,
// or nil when this build cannot dial it.
func (u *Upstream) URL(c *plan.Candidate, inbound plan.Route) *url.URL {
	if c.Channel < 0 || c.Channel >= len(u.urls) {
		return nil
	}
	i := routeIndex(c.Translate.Upstream(inbound))
	if i < 0 {
		return nil
	}
	return u.urls[c.Channel][i]
}

func routeIndex(r plan.Route) int {
	for i, x := range plan.Routes {
		if x == r {
			return i
		}
	}
	return -1
}

// Credential is the header that presents the provider's credential and its
// value; name is "" when the provider takes none. The value is a secret:
// never log it.
func (u *Upstream) Credential() (name string, value []string) { return u.authKey, u.authValue }

// ModelHeader is the upstream model name as a header value.
func (u *Upstream) ModelHeader(name string) []string {
	if v, ok := u.modelHeaders[name]; ok {
		return v
	}
	return []string{name}
}

// StreamUsage is the provider's stream_usage: whether its OpenAI-dialect
// streams may be asked for usage on the client's behalf.
func (u *Upstream) StreamUsage() bool { return u.streamUsage }

// StaticHeaders are the headers the provider sets on every request, with
// canonical names. The caller must not modify them.
func (u *Upstream) StaticHeaders() []plan.Header { return u.headers }

// HasStaticHeader reports whether the provider sets header k (canonical).
func (u *Upstream) HasStaticHeader(k string) bool {
	for _, h := range u.headers {
		if h.Name == k {
			return true
		}
	}
	return false
}

// resolveTranslation reads what translated candidates of p need: the static
// anthropic-version, each model's default max_tokens, and whether streams
// may ask for usage.
func (u *Upstream) resolveTranslation(p *plan.Provider) {
	u.streamUsage = p.StreamUsage
	for _, h := range u.headers {
		if h.Name == "Anthropic-Version" {
			u.anthropicVersion = h.Value
		}
	}
	for _, m := range p.Models {
		if m.MaxTokens > 0 {
			if u.maxTokens == nil {
				u.maxTokens = make(map[string]int64, len(p.Models))
			}
			u.maxTokens[m.Name] = m.MaxTokens
		}
	}
}

// Target is what a translator needs to know of candidate c on u.
func (u *Upstream) Target(c *plan.Candidate) translate.Target {
	return translate.Target{Model: c.Model, MaxTokens: u.maxTokens[c.Model],
		AnthropicVersion: u.anthropicVersion, StreamUsage: u.streamUsage}
}

// Classes is a set of failure classes.
type Classes uint8

// Has reports whether c is in s.
func (s Classes) Has(c plan.FailureClass) bool {
	i := classIndex(c)
	return i >= 0 && s&(1<<i) != 0
}

func classIndex(c plan.FailureClass) int {
	for i, k := range plan.FailureClasses {
		if k == c {
			return i
		}
	}
	return -1
}

func parseClasses(names []plan.FailureClass) (Classes, error) {
	var s Classes
	for _, n := range names {
		i := classIndex(n)
		if i < 0 {
			return 0, fmt.Errorf("unknown failure class %q (known: %s)", n, strings.Join(plan.Names(plan.FailureClasses), ", "))
		}
		s |= 1 << i
	}
	return s, nil
}
