package realtime

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// DefaultHandshakeTimeout bounds an upstream's handshake when its provider
// states no timeout.
const DefaultHandshakeTimeout = 30 * time.Second

// Target is what one candidate's session is dialled with.
type Target struct {
	Upstream  *upstream.Upstream
	Candidate *plan.Candidate
	Route     plan.Route
	// Query is the client's query (Realtime's model=, ...), whose model is
	// replaced by the candidate's; LiveVersion is the Live API version the
	// client dialled (v1beta, v1alpha).
	Query       url.Values
	LiveVersion string
}

// URL is where t's session is dialled, nil when its channel does not
// carry the route (or is pooled: sessions are not pooled).
func (t *Target) URL() *url.URL {
	if t.Upstream.Pooled(t.Candidate) {
		return nil
	}
	base := t.Upstream.URL(t.Candidate, t.Route)
	if base == nil {
		return nil
	}
	u := *base
	q, _ := url.ParseQuery(u.RawQuery) // built by upstream.Resolve: well-formed
	for k, v := range t.Query {
		// key= is how a Gemini client may present its key: the caller's
		// credential is never forwarded.
		if _, static := q[k]; !static && k != "key" {
			q[k] = v
		}
	}
	switch t.Route {
	case plan.RouteRealtime:
		q.Set("model", t.Candidate.Model)
	case plan.RouteLive:
		if t.LiveVersion != "" {
			u.Path = strings.TrimSuffix(u.Path, plan.LivePath("v1beta")) + plan.LivePath(t.LiveVersion)
		}
	}
	u.RawQuery = q.Encode()
	return &u
}

// Dial opens t's upstream session: the provider's credential in its
// scheme, its static headers, never the client's; compression off, so
// what passes is what the decoder reads. The handshake is bounded by the
// provider's timeout. status is the upstream's answer to the
// handshake, when it gave one.
func Dial(ctx context.Context, t *Target, requestID string) (c *websocket.Conn, status int, err error) {
	u := t.URL()
	if u == nil {
		return nil, 0, fmt.Errorf("provider %s has no %s channel to dial", t.Upstream.Name, t.Route)
	}
	ch := t.Upstream.Channel(t.Candidate)
	h := http.Header{}
	for _, sh := range ch.StaticHeaders() {
		h.Set(sh.Name, sh.Value)
	}
	if name, value := ch.Credential(); name != "" {
		h[name] = value
	}
	h.Set("X-Request-Id", requestID)
	timeout := cmp.Or(t.Upstream.Timeout, DefaultHandshakeTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient: clientFor(t.Upstream.TLS), HTTPHeader: h, CompressionMode: websocket.CompressionDisabled,
	})
	if resp != nil {
		status = resp.StatusCode
	}
	if err != nil {
		return nil, status, fmt.Errorf("dial %s %s: %w", t.Upstream.Name, u.Redacted(), err)
	}
	c.SetReadLimit(-1) // the relay streams messages of any size
	return c, status, nil
}

// plainClient dials providers with the system's TLS defaults; a provider
// with its own TLS options gets a client of its own per dial, as sessions
// are few beside requests.
var plainClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}

func clientFor(cfg *tls.Config) *http.Client {
	if cfg == nil {
		return plainClient
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: cfg}}
}
