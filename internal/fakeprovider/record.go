package fakeprovider

import (
	"crypto/x509"
	"net/http"
	"sync"
)

const (
	// DefaultRecordLimit is how many requests a server keeps when Options
	// does not say.
	DefaultRecordLimit = 256
	// maxRecordedBody caps each recorded body; Recorded.BodySize keeps the
	// real size.
	maxRecordedBody = 256 << 10
)

// Recorded is one API call as the server received it, for tests to check
// what a gateway forwarded.
type Recorded struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	// Body is the request body, cut at 256 KiB; BodySize is its full length.
	Body     []byte
	BodySize int
	// Model is the body's "model", if it had one.
	Model string
	// ClientCert is the certificate the caller presented over TLS, if any.
	ClientCert *x509.Certificate
}

// recorder keeps the last limit calls in a ring.
type recorder struct {
	mu    sync.Mutex
	limit int
	ring  []Recorded
	total int
}

func (r *recorder) add(req *http.Request, body []byte, model string) {
	if r.limit <= 0 {
		return
	}
	rec := Recorded{
		Method:   req.Method,
		Path:     req.URL.Path,
		RawQuery: req.URL.RawQuery,
		Header:   req.Header.Clone(),
		Body:     append([]byte(nil), body[:min(len(body), maxRecordedBody)]...),
		BodySize: len(body),
		Model:    model,
	}
	if req.TLS != nil && len(req.TLS.PeerCertificates) > 0 {
		rec.ClientCert = req.TLS.PeerCertificates[0]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < r.limit {
		r.ring = append(r.ring, rec)
	} else {
		r.ring[r.total%r.limit] = rec
	}
	r.total++
}

// list returns the kept calls, oldest first.
func (r *recorder) list() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Recorded, 0, len(r.ring))
	if len(r.ring) < r.limit {
		return append(out, r.ring...)
	}
	start := r.total % r.limit
	out = append(out, r.ring[start:]...)
	return append(out, r.ring[:start]...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring = nil
	r.total = 0
}
