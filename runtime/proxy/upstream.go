package proxy

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Upstream is a provider resolved for serving: its credential read from the
// environment, its static headers, its retry and failover policy as
// bitmasks, and the URL of every (channel, route) it serves, built once per
// snapshot so no request parses a URL.
type Upstream struct {
	Name string
	// nameValue is Name as a header value, shared by every response.
	nameValue []string
	// authKey/authValue present the provider's credential; authKey is ""
	// when the provider takes none. authValue is a secret: never log it.
	authKey   string
	authValue []string
	headers   []plan.Header // canonical names
	retryMax  int
	retryOn   classSet
	backoff   time.Duration
	timeout   time.Duration
	failover  classSet
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

// upstreamPaths is the path each upstream route takes below a base URL
// that ends in /v1.
var upstreamPaths = map[plan.Route]string{
	plan.RouteChatCompletions: "/chat/completions",
	plan.RouteCompletions:     "/completions",
	plan.RouteEmbeddings:      "/embeddings",
	plan.RouteResponses:       "/responses",
	plan.RouteMessages:        "/messages",
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
	u.Name, u.nameValue = p.Name, []string{p.Name}
	if err := u.resolveAuth(p, env); err != nil {
		return err
	}
	for _, h := range p.Headers {
		u.headers = append(u.headers, plan.Header{Name: textproto.CanonicalMIMEHeaderKey(h.Name), Value: h.Value})
	}
	u.resolveTranslation(p)
	var err error
	if u.retryOn, err = parseClasses(p.Retry.On); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	if u.failover, err = parseClasses(p.Failover.On); err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	u.retryMax = p.Retry.Max
	u.backoff = time.Duration(p.Retry.BackoffMS) * time.Millisecond
	u.timeout = time.Duration(p.TimeoutMS) * time.Millisecond
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
		path, ok := upstreamPaths[r]
		if !ok {
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

// class is why an attempt failed: plan's failure classes, which retry.on
// and failover.on list, and two outcomes policy cannot name. classNone
// means the attempt produced the answer.
type class uint8

const (
	classNone class = iota
	classConnect
	class5xx
	class429
	classTimeout
	// classCanceled: the client went away; nothing more is attempted.
	classCanceled
)

// classNames spells each class; those policy can name are plan's, and
// are also the retry and failover metrics' reason label.
var classNames = [...]string{
	classNone:     "",
	classConnect:  string(plan.FailureConnect),
	class5xx:      string(plan.Failure5xx),
	class429:      string(plan.Failure429),
	classTimeout:  string(plan.FailureTimeout),
	classCanceled: "canceled",
}

func (c class) String() string { return classNames[c] }

type classSet uint8

func (s classSet) has(c class) bool { return s&(1<<c) != 0 }

func parseClasses(names []plan.FailureClass) (classSet, error) {
	var s classSet
	for _, n := range names {
		found := false
		for c := classConnect; c <= classTimeout; c++ {
			if classNames[c] == string(n) {
				s |= 1 << c
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown failure class %q (known: %s)", n, strings.Join(plan.Names(plan.FailureClasses), ", "))
		}
	}
	return s, nil
}

// classify maps an upstream status to a failure class.
func classify(status int) class {
	switch {
	case status == http.StatusTooManyRequests:
		return class429
	case status >= 500:
		return class5xx
	}
	return classNone
}
