// Package upstream resolves a policy's providers for serving: for every
// (provider, channel) the credential read from the environment and the
// header that presents it, the static headers fit to the channel's
// dialect, and the URL of every route it serves; per provider its TLS
// options, its retry and failover policy as bit sets and what its
// translated candidates need. All of it is built once per snapshot so no
// request parses a URL, reads the environment or decides a header.
package upstream

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/certs"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// Upstream is a provider resolved for serving.
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
	// TLS is the provider's own TLS client configuration (CA bundle,
	// client certificate), nil when the defaults serve. Transport is
	// the round tripper built for it when the snapshot was loaded (see
	// proxy.NewTLSTransport); nil sends through the shared transport.
	TLS       *tls.Config
	Transport http.RoundTripper
	// channels is indexed like the provider's channels.
	channels []Channel
	// maxTokens is each model's default max_tokens and streamUsage the
	// policy's stream_usage; translated candidates read them (see
	// translated.go).
	maxTokens   map[string]int64
	streamUsage bool
}

// Channel is one of a provider's channels resolved for serving: what an
// upstream request on it carries besides the client's body.
type Channel struct {
	// dialect is the channel's: the client headers meant for the other
	// one stay behind.
	dialect plan.Dialect
	// authKey/authValue present the channel's credential; authKey is ""
	// when it takes none. authValue is a secret: never log it.
	authKey   string
	authValue []string
	// headers are the provider's static headers and the channel's own,
	// canonical names, without those meant for the other dialect.
	headers []plan.Header
	// urls[route index] is nil where the channel does not serve the route.
	// A pooled channel's are templates without a host (MemberURL puts the
	// picked member's there).
	urls   []*url.URL
	pooled bool
	// anthropicVersion is the channel's static anthropic-version, which a
	// body translated for it is written for.
	anthropicVersion string
}

// Retry is a provider's same-provider retry policy.
type Retry struct {
	// Max is how many times an attempt is re-sent.
	Max int
	On  Classes
	// Backoff is the first wait, doubled per retry.
	Backoff time.Duration
}

// Resolve prepares every provider of g. env looks credentials up
// (os.LookupEnv in pistrad); every variable a channel needs that is unset
// or empty is named in one error, with the provider and channel that need
// it, so a bad deployment fails at start-up or reload with the whole list,
// not on the first request nor one variable at a time.
func Resolve(g *plan.Graph, env func(string) (string, bool)) ([]Upstream, error) {
	ups := make([]Upstream, len(g.Providers))
	var errs []error
	var missing []string
	for i := range g.Providers {
		p := &g.Providers[i]
		m, err := ups[i].resolve(p, poolScheme(g, p), env)
		for _, v := range m {
			missing = append(missing, v.describe(fmt.Sprintf("provider %q", p.Name)))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("provider %q: %w", p.Name, err))
		}
	}
	if len(missing) > 0 {
		errs = append([]error{fmt.Errorf("credential variables not set: %s", strings.Join(missing, ", "))}, errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ups, nil
}

// unset is a credential variable a provider's channels need and the
// environment lacks; channels lists those that name it themselves (it is
// the provider's own when none do).
type unset struct {
	env      string
	channels []string
}

// describe names m for its owner: `provider "openai"`, say.
func (m unset) describe(owner string) string {
	if len(m.channels) == 0 {
		return fmt.Sprintf("%s (%s)", m.env, owner)
	}
	return fmt.Sprintf("%s (%s, channel %s)", m.env, owner, strings.Join(m.channels, ", "))
}

func (u *Upstream) resolve(p *plan.Provider, scheme string, env func(string) (string, bool)) ([]unset, error) {
	u.Name, u.NameHeader = p.Name, []string{p.Name}
	u.resolveTranslation(p)
	u.modelHeaders = make(map[string][]string, len(p.Models))
	for _, m := range p.Models {
		u.modelHeaders[m.Name] = []string{m.Name}
	}
	var errs []error
	var err error
	if u.Retry.On, err = parseClasses(p.Retry.On); err != nil {
		errs = append(errs, fmt.Errorf("retry: %w", err))
	}
	if u.FailoverOn, err = parseClasses(p.Failover.On); err != nil {
		errs = append(errs, fmt.Errorf("failover: %w", err))
	}
	u.FailoverTo = p.Failover.To
	u.Retry.Max = p.Retry.Max
	u.Retry.Backoff = time.Duration(p.Retry.BackoffMS) * time.Millisecond
	u.Timeout = time.Duration(p.TimeoutMS) * time.Millisecond
	if p.TLS != nil {
		if u.TLS, err = LoadTLS(p.TLS); err != nil {
			errs = append(errs, err)
		}
	}
	creds := credentials{env: env}
	u.channels = make([]Channel, len(p.Channels))
	for ci := range p.Channels {
		if err := u.channels[ci].resolve(p, ci, scheme, &creds); err != nil {
			errs = append(errs, fmt.Errorf("channel %q: %w", p.Channels[ci].Name, err))
		}
	}
	return creds.missing, errors.Join(errs...)
}

// credentials reads a provider's credential variables and keeps those
// that are unset, each once.
type credentials struct {
	env     func(string) (string, bool)
	missing []unset
}

// lookup reads variable name for channel (its name when it names the
// variable itself, else "").
func (c *credentials) lookup(name, channel string) (string, bool) {
	if secret, ok := c.env(name); ok && secret != "" {
		return secret, true
	}
	i := slices.IndexFunc(c.missing, func(m unset) bool { return m.env == name })
	if i < 0 {
		c.missing = append(c.missing, unset{env: name})
		i = len(c.missing) - 1
	}
	if channel != "" {
		c.missing[i].channels = append(c.missing[i].channels, strconv.Quote(channel))
	}
	return "", false
}

// resolve fits channel ci of p: the credential its scheme presents, the
// headers of its dialect, its URLs (templates on scheme, for the members
// of p's pool, when the channel has no base URL of its own and scheme is
// set).
func (ch *Channel) resolve(p *plan.Provider, ci int, scheme string, creds *credentials) error {
	pc := &p.Channels[ci]
	ch.dialect = pc.Dialect
	if name := p.ChannelCredentialEnv(ci); name != "" {
		// A channel that names its own variable is named in the error;
		// one that inherits the provider's is the provider's concern.
		owner := ""
		if pc.CredentialEnv != "" {
			owner = pc.Name
		}
		if secret, ok := creds.lookup(name, owner); ok {
			if err := ch.setAuth(p.ChannelAuth(ci), secret); err != nil {
				return err
			}
		}
	}
	for _, h := range p.Headers {
		if d := plan.HeaderDialect(h.Name); d == "" || d == pc.Dialect {
			ch.setHeader(h)
		}
	}
	for _, h := range pc.Headers {
		ch.setHeader(h)
	}
	for _, h := range ch.headers {
		if h.Name == "Anthropic-Version" {
			ch.anthropicVersion = h.Value
		}
	}
	var err error
	ch.urls, ch.pooled, err = channelURLs(p, pc, scheme)
	return err
}

func (ch *Channel) setAuth(scheme plan.AuthScheme, secret string) (err error) {
	ch.authKey, ch.authValue, err = authHeader(scheme, secret)
	return err
}

// authHeader is the header that presents secret by scheme. Its value is a
// secret: never log it.
func authHeader(scheme plan.AuthScheme, secret string) (string, []string, error) {
	switch scheme {
	case plan.AuthBearer:
		return "Authorization", []string{"Bearer " + secret}, nil
	case plan.AuthXAPIKey:
		return "X-Api-Key", []string{secret}, nil
	case plan.AuthAPIKey:
		return "Api-Key", []string{secret}, nil
	case plan.AuthGoogAPIKey:
		return "X-Goog-Api-Key", []string{secret}, nil
	}
	return "", nil, fmt.Errorf("unknown auth scheme %q (known: %s)", scheme, strings.Join(plan.Names(plan.AuthSchemes), ", "))
}

// setHeader sets h, replacing a header of the same name.
func (ch *Channel) setHeader(h plan.Header) { ch.headers = withHeader(ch.headers, h) }

// withHeader is hs with h set under its canonical name, replacing a
// header of the same name.
func withHeader(hs []plan.Header, h plan.Header) []plan.Header {
	h.Name = textproto.CanonicalMIMEHeaderKey(h.Name)
	for i := range hs {
		if hs[i].Name == h.Name {
			hs[i].Value = h.Value
			return hs
		}
	}
	return append(hs, h)
}

// LoadTLS reads a provider's TLS files into a client configuration (the
// gateway's and reconcile's, which reads the provider's usage API). Errors
// name the field and the file.
func LoadTLS(t *plan.TLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pool, err := certs.CAPool(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %w", err)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, errors.New("tls: cert_file and key_file go together")
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls cert_file %s, key_file %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// channelURLs builds the URL of every route the channel serves, with the
// provider's static query parameters and the channel's over them. A
// channel reaching its provider's pool (pooled) gets templates on scheme
// with no host, for the member each attempt picks.
func channelURLs(p *plan.Provider, ch *plan.Channel, scheme string) (urls []*url.URL, pooled bool, err error) {
	out := make([]*url.URL, len(plan.Routes))
	base := cmp.Or(ch.BaseURL, p.BaseURL)
	if base == "" {
		if scheme == "" {
			return out, false, nil // nothing to dial (a graph verify refuses)
		}
		base, pooled = scheme+"://"+poolHost+poolBase, true
	}
	var query string
	if len(p.Query)+len(ch.Query) > 0 {
		q := url.Values{}
		for _, kv := range p.Query {
			q.Set(kv.Name, kv.Value)
		}
		for _, kv := range ch.Query {
			q.Set(kv.Name, kv.Value)
		}
		query = q.Encode()
	}
	for _, r := range ch.Routes {
		path := r.UpstreamPath()
		if path == "" {
			return nil, false, fmt.Errorf("unknown route %q", r)
		}
		u, err := url.Parse(strings.TrimSuffix(base, "/") + path)
		if err != nil {
			return nil, false, fmt.Errorf("base URL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, false, fmt.Errorf("base URL %q is not an absolute http(s) URL", base)
		}
		if pooled {
			u.Host = ""
		}
		u.RawQuery = query
		out[routeIndex(r)] = u
	}
	return out, pooled, nil
}

// URL is where candidate c is sent for a request that arrived on inbound,
// nil when c's channel does not serve that route; for a pooled candidate
// it is the template without a host (MemberURL fills it in).
func (u *Upstream) URL(c *plan.Candidate, inbound plan.Route) *url.URL {
	if c.Channel < 0 || c.Channel >= len(u.channels) {
		return nil
	}
	i := routeIndex(c.Translate.Upstream(inbound))
	if i < 0 {
		return nil
	}
	return u.channels[c.Channel].urls[i]
}

// Hosts adds to set the host (host or host:port, as the URL writes it) of
// every fixed URL u's channels send to (a pool's members come and go with
// DNS, and are not among them).
func (u *Upstream) Hosts(set map[string]bool) {
	for i := range u.channels {
		for _, url := range u.channels[i].urls {
			if url != nil && url.Host != "" {
				set[url.Host] = true
			}
		}
	}
}

// Channel is candidate c's channel; c must be one of u's.
func (u *Upstream) Channel(c *plan.Candidate) *Channel { return &u.channels[c.Channel] }

func routeIndex(r plan.Route) int {
	for i, x := range plan.Routes {
		if x == r {
			return i
		}
	}
	return -1
}

// Credential is the header that presents the channel's credential and its
// value; name is "" when the channel takes none. The value is a secret:
// never log it.
func (ch *Channel) Credential() (name string, value []string) { return ch.authKey, ch.authValue }

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

// Dialect is the dialect the channel speaks.
func (ch *Channel) Dialect() plan.Dialect { return ch.dialect }

// StaticHeaders are the headers the channel sets on every request, with
// canonical names. The caller must not modify them.
func (ch *Channel) StaticHeaders() []plan.Header { return ch.headers }

// resolveTranslation reads what translated candidates of p need: each
// model's default max_tokens, and whether streams may ask for usage.
func (u *Upstream) resolveTranslation(p *plan.Provider) {
	u.streamUsage = p.StreamUsage
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
		AnthropicVersion: u.channels[c.Channel].anthropicVersion, StreamUsage: u.streamUsage}
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
