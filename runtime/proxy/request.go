package proxy

import (
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// Client headers forwarded upstream. Everything else the client sent stays
// behind: its credentials (Authorization, x-api-key) above all, every
// hop-by-hop header (Connection and what it names, Keep-Alive, TE, Trailer,
// Transfer-Encoding, Upgrade, Proxy-*), and OpenAI-Organization and
// OpenAI-Project: those select an account of the client's own credential,
// which the upstream never sees, and OpenAI refuses a request whose
// organization the key does not belong to. An operator who needs them sets
// them as the provider's static headers.
//
//   - Anthropic-Version, Anthropic-Beta: the Anthropic API version and opt-ins
//     the body was written for, to Anthropic-dialect channels only (an
//     OpenAI-dialect upstream may refuse what it does not know)
//   - User-Agent and X-Stainless-*: SDK identification and telemetry
//   - Accept: what the client can read
//   - Traceparent, Tracestate: the client's W3C trace context, so the
//     upstream's spans join the client's trace; a traced gateway writes
//     its attempt's own in their place (runtime/tracing)
//
// A static header of the channel (the provider's, fit to the channel's
// dialect, and the channel's own; see runtime/upstream) with the same name
// replaces the client's
// (the operator's configuration wins), except the ones that say what the
// body means: the client wrote its body for its own Anthropic-Version and
// Anthropic-Beta, so those pass as sent, and the provider's values only
// fill in when the client sent none. A translated body is pistrad's own and
// follows the provider's version instead (fitTranslatedHeaders).
//
// The value is the dialect the header is meant for (plan.HeaderDialect),
// "" for any, looked up once here rather than per request.
var forwardedHeaders = dialectsOf("Anthropic-Version", "Anthropic-Beta", "User-Agent", "Accept", "Traceparent", "Tracestate")

func dialectsOf(names ...string) map[string]plan.Dialect {
	m := make(map[string]plan.Dialect, len(names))
	for _, n := range names {
		m[n] = plan.HeaderDialect(n)
	}
	return m
}

// bodyShapeHeaders are the forwarded headers that fix how the body reads.
var bodyShapeHeaders = map[string]bool{"Anthropic-Version": true, "Anthropic-Beta": true}

const stainlessPrefix = "X-Stainless-"

// Header values shared by every upstream request; never modified.
var (
	jsonContentType = []string{"application/json"}
	// noUserAgent stops net/http adding its own when the client sent none.
	noUserAgent = []string{""}
)

// newRequest builds the upstream request for one attempt on channel ch from
// scratch, so nothing (credential, model, header) leaks from one candidate
// to the next: the credential and static headers are the channel's alone,
// and a channel without a credential (a client-certificate upstream) gets
// no credential header of any kind. It carries no context: roundTrip
// gives the transport the client's.
func newRequest(x *Exchange, ch *upstream.Channel, u *url.URL, body []byte) *http.Request {
	static := ch.StaticHeaders()
	h := make(http.Header, 8+len(static))
	copyClientHeaders(h, x.Client.Header, ch.Dialect())
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = noUserAgent
	}
	for _, kv := range static {
		if bodyShapeHeaders[kv.Name] && len(h[kv.Name]) > 0 {
			continue
		}
		h[kv.Name] = []string{kv.Value}
	}
	h["Content-Type"] = jsonContentType
	h["X-Request-Id"] = x.requestIDValue()
	if k, v := ch.Credential(); k != "" {
		h[k] = v
	}
	return &http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Host:          u.Host,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          x.Body.reader(body),
		GetBody:       func() (io.ReadCloser, error) { return resentBody(body), nil },
		ContentLength: int64(len(body)),
	}
}

// copyClientHeaders copies the allow-listed client headers meant for an
// upstream of dialect d into h, minus any the client's Connection header
// marks as hop-by-hop.
func copyClientHeaders(h, client http.Header, d plan.Dialect) {
	var hop []string
	if conn := client["Connection"]; len(conn) > 0 {
		hop = connectionTokens(conn)
	}
	for k, vs := range client {
		meant, ok := forwardedHeaders[k]
		if !ok && !strings.HasPrefix(k, stainlessPrefix) {
			continue
		}
		if meant != "" && meant != d {
			continue
		}
		if hop != nil && containsFold(hop, k) {
			continue
		}
		h[k] = vs
	}
}

func connectionTokens(values []string) []string {
	var out []string
	for _, v := range values {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				out = append(out, textproto.CanonicalMIMEHeaderKey(tok))
			}
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
