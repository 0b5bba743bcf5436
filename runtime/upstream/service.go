package upstream

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Service is an MCP server or A2A agent resolved for serving, the way a
// provider's channel is: its credential read from the environment and the
// header that presents it, its static headers, its URL and TLS.
type Service struct {
	Name string
	Kind plan.ServiceKind
	// URL is the service's endpoint; a call's path below it is added by
	// the protocol (A2A's card, its HTTP+JSON routes).
	URL *url.URL
	// Timeout bounds the wait for the response headers; 0 for none.
	Timeout time.Duration
	// TLS and Transport as on Upstream: nil sends through the shared
	// transport.
	TLS       *tls.Config
	Transport http.RoundTripper
	authKey   string
	authValue []string
	headers   []plan.Header
}

// ResolveServices prepares g's MCP servers and agents, indexed as
// Graph.MCPServers and Graph.Agents. Every credential variable that is
// unset is named in one error, as Resolve does for providers.
func ResolveServices(g *plan.Graph, env func(string) (string, bool)) (mcp, agents []Service, err error) {
	var errs []error
	var missing []string
	resolve := func(list []plan.Service) []Service {
		out := make([]Service, len(list))
		for i := range list {
			p := &list[i]
			creds := credentials{env: env}
			if err := out[i].resolve(p, &creds); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", p.Kind, p.Name, err))
			}
			for _, v := range creds.missing {
				missing = append(missing, v.describe(fmt.Sprintf("%s %q", p.Kind, p.Name)))
			}
		}
		return out
	}
	mcp, agents = resolve(g.MCPServers), resolve(g.Agents)
	if len(missing) > 0 {
		errs = append([]error{fmt.Errorf("credential variables not set: %s", strings.Join(missing, ", "))}, errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return mcp, agents, nil
}

func (s *Service) resolve(p *plan.Service, creds *credentials) error {
	s.Name, s.Kind = p.Name, p.Kind
	s.Timeout = time.Duration(p.TimeoutMS) * time.Millisecond
	var errs []error
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url %q is not an absolute http(s) URL", p.URL))
	}
	s.URL = u
	if p.CredentialEnv != "" {
		if secret, ok := creds.lookup(p.CredentialEnv, ""); ok {
			scheme := p.Auth
			if scheme == "" {
				scheme = plan.AuthBearer
			}
			if s.authKey, s.authValue, err = authHeader(scheme, secret); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, h := range p.Headers {
		s.headers = withHeader(s.headers, h)
	}
	if p.TLS != nil {
		if s.TLS, err = loadTLS(p.TLS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Credential is the header presenting the service's credential; name is ""
// when it takes none. value is a secret: never log it.
func (s *Service) Credential() (name string, value []string) { return s.authKey, s.authValue }

// StaticHeaders are the service's static headers, canonical names.
func (s *Service) StaticHeaders() []plan.Header { return s.headers }

// Hosts adds the host the service is reached at to set.
func (s *Service) Hosts(set map[string]bool) {
	if s.URL != nil {
		set[s.URL.Host] = true
	}
}
