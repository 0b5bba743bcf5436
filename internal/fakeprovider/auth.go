package fakeprovider

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized checks the credential the way each endpoint does and answers
// 401 in the endpoint's error shape (and, for Anthropic's own API, 400
// without anthropic-version) when it fails. OpenAI-dialect endpoints,
// Anthropic's OpenAI-compatible one included, take only Authorization:
// Bearer; Anthropic's /v1/messages takes x-api-key or, as its current SDKs
// send it, Authorization: Bearer. A server behind client-certificate TLS
// reads no key at all.
func (x *exchange) authorized() bool {
	if x.s.certAuth {
		return x.certAuthorized()
	}
	h := x.r.Header
	bearer, hasBearer := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if x.wire() == DialectOpenAI {
		switch {
		case !hasBearer || bearer == "":
			x.fail(&apiError{status: http.StatusUnauthorized,
				message: "You didn't provide an API key. Send it in an Authorization header as Bearer auth."})
		case !x.s.keyMatches(bearer):
			x.fail(&apiError{status: http.StatusUnauthorized, message: "Incorrect API key provided."})
		default:
			x.keyID = KeyID(x.s.dialect, bearer)
			return true
		}
		return false
	}
	key := h.Get("X-Api-Key")
	if key == "" && hasBearer {
		key = bearer
	}
	switch {
	case key == "":
		x.fail(&apiError{status: http.StatusUnauthorized, message: "x-api-key header is required"})
	case !x.s.keyMatches(key):
		x.fail(&apiError{status: http.StatusUnauthorized, message: "invalid x-api-key"})
	case !x.compat && h.Get("Anthropic-Version") == "":
		x.fail(badRequest("anthropic-version: header is required", ""))
	default:
		x.keyID = KeyID(x.s.dialect, key)
		return true
	}
	return false
}

// certAuthorized admits a call that came over TLS with a client
// certificate the listener verified.
func (x *exchange) certAuthorized() bool {
	if t := x.r.TLS; t != nil && len(t.VerifiedChains) > 0 {
		return true
	}
	x.fail(&apiError{status: http.StatusUnauthorized, message: "a verified client certificate is required"})
	return false
}

func (s *Server) keyMatches(key string) bool {
	if len(s.key) == 0 {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(key), s.key) == 1
}
