package compiler

import (
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/plan"
)

// The schema leaves vocabularies as plain strings, so that a wrong value is
// reported with the accepted list instead of CUE's disjunction dump. Those
// the graph carries are plan's lists (plan.FailureClasses, ...); these are
// the rest.
var (
	dialects = []string{string(plan.DialectOpenAI), string(plan.DialectAnthropic), string(plan.DialectGemini)}
	tiers    = []string{string(plan.TierNative), string(plan.TierProviderCompat)}
	schemes  = []string{"http", "https"}
	// credentialHeaders may only be sent from credential_env: a static
	// header value would put the secret in the policy and in gen/.
	credentialHeaders = []string{"authorization", "x-api-key", "api-key", "x-goog-api-key"}

	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") // an RFC 9110 token
	isoDate    = "2006-01-02"
)

// check runs every semantic check that needs nothing but the document
// itself; cross-references between providers are in resolve.go.
func (c *compiler) check() {
	enum(c, path("on_fidelity_loss"), "on_fidelity_loss value", c.src.OnFidelityLoss, plan.LossActions)
	for _, name := range sortedKeys(c.src.Providers) {
		c.checkProvider(name, c.src.Providers[name])
	}
	for _, name := range sortedKeys(c.src.Pools) {
		c.checkPool(name, c.src.Pools[name])
	}
	c.checkServices()
	c.checkOverlays()
	c.checkPolicy()
}

func (c *compiler) checkProvider(name string, p srcProvider) {
	at := func(elems ...any) cue.Path { return path(append([]any{"providers", name}, elems...)...) }
	switch {
	case p.BaseURL != nil && p.Pool != nil:
		c.labelErrorf(at(), "has both base_url and pool; give exactly one (base_url for a hosted API, pool for self-hosted servers)")
	case p.BaseURL == nil && p.Pool == nil:
		c.labelErrorf(at(), "has neither base_url nor pool; give exactly one (base_url for a hosted API, pool for self-hosted servers)")
	case p.BaseURL != nil:
		c.checkURL(at("base_url"), *p.BaseURL)
	}
	if p.Pool != nil {
		if _, ok := c.src.Pools[*p.Pool]; !ok {
			pools := sortedKeys(c.src.Pools)
			c.errorf(at("pool"), "unknown pool %q (known: %s)%s", *p.Pool, listOf(pools), didYouMean(*p.Pool, pools))
		}
	}
	c.checkAuth(at(), p.CredentialEnv, p.Auth)
	c.checkUsageAPI(at("usage_api"), p)
	c.checkHeaders(at("headers"), p.Headers)
	c.checkQuery(at("query"), p.Query)
	c.checkDialectHeaders(name, p)
	if p.TLS != nil {
		c.checkTLS(name, p)
	}
	if len(p.Models) == 0 {
		c.labelErrorf(at("models"), "provider %q serves no models", name)
	}
	for _, m := range sortedKeys(p.Models) {
		c.checkModelRoutes(at("models", m, "routes"), p.Models[m].Routes)
	}
	if len(p.Channels) == 0 {
		c.labelErrorf(at("channels"), "provider %q has no channels; declare at least one (dialect and tier)", name)
	}
	for _, ch := range sortedKeys(p.Channels) {
		c.checkChannel(at("channels", ch), p.Channels[ch])
	}
	for _, a := range sortedKeys(p.Aliases) {
		if _, ok := p.Models[a]; ok {
			c.labelErrorf(at("aliases", a), "alias %q has the name of a model provider %q serves; an alias must not shadow a model", a, name)
		}
	}
	c.checkResilience(name, p)
}

// checkAuth checks a provider's or channel's credential_env and auth.
func (c *compiler) checkAuth(at cue.Path, env *string, auth *plan.AuthScheme) {
	if env != nil {
		// Not echoed: an operator who pasted the secret here should not
		// find it in CI logs as well. A key can look like a variable name
		// (AIza... is letters, digits and _), so its look is read too.
		if why, secret := valueLooksSecret(*env); secret {
			c.errorf(sub(at, "credential_env"), "%s; credential_env names the environment variable that holds the credential, not the credential itself", why)
		} else if !envName.MatchString(*env) {
			c.errorf(sub(at, "credential_env"), "must name an environment variable (letters, digits and _, not starting with a digit), not hold the credential itself")
		}
	}
	if auth != nil {
		enum(c, sub(at, "auth"), "auth", *auth, plan.AuthSchemes)
	}
}

// checkHeaders checks a provider's or channel's static headers.
func (c *compiler) checkHeaders(at cue.Path, headers map[string]string) {
	for _, h := range sortedKeys(headers) {
		switch {
		case slices.Contains(credentialHeaders, strings.ToLower(h)):
			c.labelErrorf(sub(at, h), "header %q carries a credential; put the secret in an environment variable named by credential_env (and set auth) instead", h)
		case !headerName.MatchString(h):
			c.labelErrorf(sub(at, h), "%q is not a valid HTTP header name", h)
		case strings.ContainsAny(headers[h], "\r\n\x00"):
			c.errorf(sub(at, h), "header value holds a line break or NUL, which would split the request")
		default:
			c.staticSecret(sub(at, h), "header", h, headers[h])
		}
	}
}

// checkQuery checks a provider's or channel's static query parameters.
func (c *compiler) checkQuery(at cue.Path, query map[string]string) {
	for _, q := range sortedKeys(query) {
		c.staticSecret(sub(at, q), "query parameter", q, query[q])
	}
}

// checkDialectHeaders refuses a header of one dialect where it can never be
// sent: a channel of the other dialect, or a provider with no channel of
// its dialect (each channel gets only its own dialect's).
func (c *compiler) checkDialectHeaders(name string, p srcProvider) {
	speaks := map[plan.Dialect]bool{}
	for _, ch := range p.Channels {
		speaks[plan.Dialect(ch.Dialect)] = true
	}
	for _, h := range sortedKeys(p.Headers) {
		if d := plan.HeaderDialect(h); d != "" && !speaks[d] {
			c.labelErrorf(path("providers", name, "headers", h),
				"header %q is for %s-dialect upstreams only, and provider %q has no %s channel to send it on", h, d, name, d)
		}
	}
	for _, cn := range sortedKeys(p.Channels) {
		ch := p.Channels[cn]
		for _, h := range sortedKeys(ch.Headers) {
			if d := plan.HeaderDialect(h); d != "" && string(d) != ch.Dialect {
				c.labelErrorf(path("providers", name, "channels", cn, "headers", h),
					"header %q is for %s-dialect upstreams only; this channel speaks %s, so it would never be sent", h, d, ch.Dialect)
			}
		}
	}
}

// checkTLS checks a provider's TLS options: absolute paths, a client
// certificate with its key, and only https upstreams to apply them to.
func (c *compiler) checkTLS(name string, p srcProvider) {
	at := path("providers", name, "tls")
	c.checkTLSFiles(at, p.TLS)
	if p.Pool != nil {
		if pool, ok := c.src.Pools[*p.Pool]; ok && pool.Scheme != "https" {
			c.labelErrorf(at, "tls applies to https upstreams, and pool %q is reached over %s", *p.Pool, pool.Scheme)
		}
		return
	}
	for _, cn := range sortedKeys(p.Channels) {
		base := p.Channels[cn].BaseURL
		if base == nil {
			base = p.BaseURL
		}
		if base != nil && strings.HasPrefix(strings.ToLower(*base), "http:") {
			c.labelErrorf(at, "tls applies to https upstreams, and channel %q is reached over http (%s)", cn, *base)
		}
	}
}

// checkTLSFiles checks a tls block, wherever it is written: absolute
// paths, a client certificate with its key, something set at all.
func (c *compiler) checkTLSFiles(tlsAt cue.Path, t *srcTLS) {
	at := func(field string) cue.Path { return sub(tlsAt, field) }
	files := []struct {
		field string
		v     *string
	}{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}}
	for _, f := range files {
		if f.v != nil && !filepath.IsAbs(*f.v) {
			c.errorf(at(f.field), "%s %q is not an absolute path; pistrad reads it wherever it runs, so name the file absolutely", f.field, *f.v)
		}
	}
	switch {
	case t.CertFile != nil && t.KeyFile == nil:
		c.labelErrorf(at("cert_file"), "a client certificate needs its key: key_file is missing")
	case t.KeyFile != nil && t.CertFile == nil:
		c.labelErrorf(at("key_file"), "a client key needs its certificate: cert_file is missing")
	case t.CAFile == nil && t.CertFile == nil && t.ServerName == nil:
		c.labelErrorf(tlsAt, "tls sets nothing; give ca_file, cert_file and key_file, or server_name, or leave tls out")
	}
	if t.ServerName != nil && *t.ServerName == "" {
		c.errorf(at("server_name"), "empty server_name; leave it out to check the certificate against the URL's host")
	}
}

// checkResilience checks the timeout, retry and failover settings; which
// providers failover.to names is resolve.go's concern.
func (c *compiler) checkResilience(name string, p srcProvider) {
	at := func(elems ...any) cue.Path { return path(append([]any{"providers", name}, elems...)...) }
	if p.Timeout != nil {
		c.duration(at("timeout"), *p.Timeout)
	}
	if r := p.Retries; r != nil {
		if r.Backoff != nil {
			c.duration(at("retries", "backoff"), *r.Backoff)
		}
		c.failureClasses(at("retries", "on"), r.On)
		if i := slices.Index(r.On, plan.FailureTimeout); i >= 0 && p.Timeout == nil {
			c.errorf(at("retries", "on", i), "retrying on timeout needs a timeout; provider %q has none", name)
		}
	}
	if f := p.Failover; f != nil {
		c.failureClasses(at("failover", "on"), f.On)
	}
	if cb := p.Circuit; cb != nil {
		c.duration(at("circuit", "cool_down"), cb.CoolDown)
	}
}

// checkModelRoutes checks a model's routes: known routes, and not an empty
// list, which would serve nothing.
func (c *compiler) checkModelRoutes(at cue.Path, routes []string) {
	if routes != nil && len(routes) == 0 {
		c.labelErrorf(at, "a model with no routes is never served; leave routes out to serve it on every route its channels carry")
	}
	for i, r := range routes {
		if !slices.Contains(plan.Routes, plan.Route(r)) {
			c.errorf(cue.MakePath(append(at.Selectors(), cue.Index(i))...), "unknown route %q (accepted: %s)%s",
				r, listOf(plan.Names(plan.Routes)), didYouMean(r, plan.Names(plan.Routes)))
		}
	}
}

func (c *compiler) checkChannel(at cue.Path, ch srcChannel) {
	field := func(name string) cue.Path { return cue.MakePath(append(at.Selectors(), cue.Str(name))...) }
	dialectOK := enum(c, field("dialect"), "dialect", ch.Dialect, dialects)
	enum(c, field("tier"), "tier", ch.Tier, tiers)
	if ch.BaseURL != nil {
		c.checkURL(field("base_url"), *ch.BaseURL)
	}
	c.checkAuth(at, ch.CredentialEnv, ch.Auth)
	c.checkHeaders(field("headers"), ch.Headers)
	c.checkQuery(field("query"), ch.Query)
	c.patterns(field("models"), ch.Models, false)
	if ch.Models != nil && len(ch.Models) == 0 {
		c.labelErrorf(field("models"), "an empty gate admits no model; leave models out to admit every model of the provider")
	}
	if ch.Routes != nil && len(ch.Routes) == 0 {
		c.labelErrorf(field("routes"), "a channel with no routes serves nothing; leave routes out to serve every route of its dialect")
	}
	if dialectOK {
		var own []string
		for _, r := range plan.Routes {
			if string(r.Dialect()) == ch.Dialect {
				own = append(own, string(r))
			}
		}
		for i, r := range ch.Routes {
			if !slices.Contains(own, r) {
				c.errorf(cue.MakePath(append(field("routes").Selectors(), cue.Index(i))...),
					"unknown route %q for dialect %s (accepted: %s)%s", r, ch.Dialect, listOf(own), didYouMean(r, own))
			}
		}
	}
	switch ch.Tier {
	case string(plan.TierNative):
		if ch.Preserves != nil {
			c.labelErrorf(field("preserves"), "a native channel keeps every capability and must not declare preserves: a list would read as exhaustive")
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"verified_at", ch.VerifiedAt != nil}, {"verified_by", ch.VerifiedBy != nil}, {"origin", ch.Origin != nil}} {
			if f.set {
				c.labelErrorf(field(f.name), "only a provider_compat channel carries a dated claim; a native channel has no %s", f.name)
			}
		}
	case string(plan.TierProviderCompat):
		c.checkClaim(at, field, ch)
	}
}

// checkClaim checks a compat channel's capability claim: what it keeps,
// and when and where that was read.
func (c *compiler) checkClaim(at cue.Path, field func(string) cue.Path, ch srcChannel) {
	if ch.Preserves == nil {
		c.labelErrorf(at, "a provider_compat channel must list the capabilities it preserves (preserves: [...], empty if none; known: %s)", listOf(plan.CapNames()))
	}
	c.caps(field("preserves"), ch.Preserves)
	if ch.VerifiedAt == nil {
		c.labelErrorf(at, "a provider_compat channel's claim must be dated: verified_at is missing (YYYY-MM-DD)")
	} else {
		c.claimDate(field("verified_at"), *ch.VerifiedAt)
	}
	if ch.VerifiedBy == nil || strings.TrimSpace(*ch.VerifiedBy) == "" {
		c.labelErrorf(at, "a provider_compat channel's claim must cite its source: verified_by is missing (the page or probe it was read from)")
	} else {
		c.textSecret(field("verified_by"), "verified_by", *ch.VerifiedBy, "shown to API clients with the claim")
	}
	if ch.Origin != nil {
		c.textSecret(field("origin"), "origin", *ch.Origin, "shown to API clients with the claim")
	}
}

// claimDate checks a claim's verified_at, wherever the claim is made.
func (c *compiler) claimDate(at cue.Path, date string) {
	if d, err := time.Parse(isoDate, date); err != nil {
		c.errorf(at, "verified_at %q is not a date (YYYY-MM-DD)", date)
	} else if d.After(c.today.AddDate(0, 0, 1)) {
		// A day of slack: the operator's today may be UTC's tomorrow.
		c.warnf(at, "verified_at %s is in the future: a claim is dated by the day it was read", date)
	}
}

// enum reports a value outside its vocabulary, listing the vocabulary.
func enum[T ~string](c *compiler, at cue.Path, what string, got T, accepted []T) bool {
	if slices.Contains(accepted, got) {
		return true
	}
	names := plan.Names(accepted)
	c.errorf(at, "unknown %s %q (accepted: %s)%s", what, got, listOf(names), didYouMean(string(got), names))
	return false
}

// caps checks a list of capability names.
func (c *compiler) caps(at cue.Path, names []string) {
	for i, n := range names {
		if _, ok := plan.ParseCap(n); !ok {
			c.errorf(index(at, i), "unknown capability %q (known: %s)%s", n, listOf(plan.CapNames()), didYouMean(n, plan.CapNames()))
		}
	}
}

func (c *compiler) failureClasses(at cue.Path, classes []plan.FailureClass) {
	for i, cl := range classes {
		enum(c, index(at, i), "failure class", cl, plan.FailureClasses)
	}
}

// patterns checks model patterns: exact names or a prefix ending in *.
// A bare "*" admits everything, which only an allow-list can mean: on a
// channel gate it is the same as no gate.
func (c *compiler) patterns(at cue.Path, pats []string, bareStar bool) {
	for i, p := range pats {
		switch {
		case strings.Contains(strings.TrimSuffix(p, "*"), "*"):
			c.errorf(index(at, i), "pattern %q has * before the end; a pattern is an exact name or a prefix ending in * (\"gpt-4o*\")", p)
		case p == "":
			c.errorf(index(at, i), "empty pattern; give an exact name or a prefix ending in *")
		case p == "*" && !bareStar:
			c.errorf(index(at, i), "a gate of \"*\" admits every model; leave models out instead")
		}
	}
}

func (c *compiler) duration(at cue.Path, s string) {
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		c.errorf(at, "%q is not a positive duration (e.g. \"250ms\", \"30s\", \"2m\")", s)
	}
}

// checkURL accepts an absolute http(s) base URL without credentials, a
// query or a fragment in it, that does not already end in a route: the
// gateway appends the route's path itself ("/chat/completions").
func (c *compiler) checkURL(at cue.Path, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		c.errorf(at, "%q is not an absolute http(s) URL (e.g. \"https://api.openai.com/v1\")", s)
	case u.User != nil:
		c.errorf(at, "URL carries credentials; name the secret's environment variable in credential_env instead")
	case u.RawQuery != "" || u.ForceQuery:
		// Not echoed: the query may hold a key (Gemini's ?key=).
		c.errorf(at, "base URL carries a query string (%s); the route is appended to the URL, so it would land in the query: "+
			"give the URL without it and each parameter in the provider's query: {...}", listOf(sortedKeys(u.Query())))
	case u.Fragment != "":
		c.errorf(at, "base URL carries a #fragment, which is never sent; remove it")
	default:
		for _, r := range plan.Routes {
			if p := r.UpstreamPath(); strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), p) {
				c.errorf(at, "base URL already ends in the route %s, which the gateway appends itself; give the URL up to the API root (%q)",
					p, strings.TrimSuffix(strings.TrimSuffix(s, "/"), p))
				return
			}
		}
	}
}

func (c *compiler) hostPort(at cue.Path, s string) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" {
		c.errorf(at, "%q is not host:port (e.g. \"vllm.inference.svc:8000\")", s)
	}
}

// sub is the path of field name below p.
func sub(p cue.Path, name string) cue.Path {
	return cue.MakePath(append(p.Selectors(), cue.Str(name))...)
}

func index(p cue.Path, i int) cue.Path {
	return cue.MakePath(append(p.Selectors(), cue.Index(i))...)
}
