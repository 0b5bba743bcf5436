// Package fakeprovider is a deterministic stand-in for the OpenAI and
// Anthropic APIs. It speaks their wire formats closely enough for the
// official SDKs, reports realistic usage (every breakdown, or other
// servers' stream shapes, on demand: see Usage), answers structured output
// with JSON that follows the requested schema, records what it receives,
// injects faults and drops capabilities as a compatibility endpoint does
// (see Drops), on demand. pistra's end-to-end tests, load benchmark,
// `pistrac probe`'s tests and `make run` use it as the upstream.
//
// An Anthropic-dialect server also answers POST /v1/chat/completions the way
// Anthropic's OpenAI-compatible layer does: OpenAI's wire format under
// Anthropic's rules (see openAICompatPath).
package fakeprovider

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Dialect is the API a server speaks.
type Dialect string

const (
	DialectOpenAI    Dialect = "openai"
	DialectAnthropic Dialect = "anthropic"
)

// Options configure a Server.
type Options struct {
	Dialect Dialect
	// Key is the credential clients must present; empty accepts any
	// non-empty one.
	Key string
	// Models are listed by GET /v1/models; empty lists the dialect's defaults.
	// Requests may name any model.
	Models []string
	// RecordLimit is how many calls Requests keeps: 0 means
	// DefaultRecordLimit, negative records nothing.
	RecordLimit int
	// Faults are injected from the start; SetFaults changes them.
	Faults Faults
	// Usage shapes reported usage from the start; SetUsage changes it.
	Usage Usage
	// Drops are dropped from the start; SetDrops changes them.
	Drops Drops
	// CertAuth authenticates callers by client certificate instead of a
	// key, as a trust-domain pool behind mutual TLS does: a call must come
	// through ListenTLS with a verified certificate, and Key is not read.
	CertAuth bool
	// AdminKey is the admin key the usage APIs take (usage_report.go);
	// without one they refuse every call.
	AdminKey string
	// Workspaces are the workspace ids (Anthropic's usage report groups
	// by them) of key secrets; a key not named is in the default
	// workspace, which the report gives as null.
	Workspaces map[string]string
	// Report bends what the usage APIs report from the start; SetReport
	// changes it.
	Report Report
	// Now is the clock the ledger bills by and the usage APIs report by;
	// nil is the system clock.
	Now func() time.Time
	// Chaos, when its Rate is set, spoils a share of the calls with a
	// fault drawn for each, in place of Faults (whose ChunkDelay still
	// paces them); the other calls keep Faults. SetChaos changes it.
	Chaos Chaos
}

// maxBodyBytes bounds a request body, like the real APIs do.
const maxBodyBytes = 32 << 20

// Server is one fake upstream speaking one dialect. It is safe for
// concurrent use.
type Server struct {
	dialect  Dialect
	key      []byte
	certAuth bool
	models   []string
	faults   faultState
	usage    atomic.Pointer[Usage]
	drops    atomic.Uint32
	chaos    atomic.Pointer[chaosState]
	rec      recorder
	calls    atomic.Int64
	ids      atomic.Uint64
	idSeed   uint64
	adminKey []byte
	// workspaces are Options.Workspaces by key id.
	workspaces map[string]string
	ledger     ledger
	report     atomic.Pointer[Report]
	now        func() time.Time
	sess       sessions
}

var _ http.Handler = (*Server)(nil)

// New builds a server.
func New(opts Options) (*Server, error) {
	if opts.Dialect != DialectOpenAI && opts.Dialect != DialectAnthropic && opts.Dialect != DialectGemini {
		return nil, fmt.Errorf("fakeprovider: unknown dialect %q (want %q, %q or %q)", opts.Dialect, DialectOpenAI, DialectAnthropic, DialectGemini)
	}
	if err := opts.Faults.Validate(); err != nil {
		return nil, fmt.Errorf("fakeprovider: %w", err)
	}
	s := &Server{dialect: opts.Dialect, key: []byte(opts.Key), models: opts.Models, certAuth: opts.CertAuth,
		adminKey: []byte(opts.AdminKey), now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.workspaces = make(map[string]string, len(opts.Workspaces))
	for secret, ws := range opts.Workspaces {
		s.workspaces[KeyID(opts.Dialect, secret)] = ws
	}
	if err := s.SetReport(opts.Report); err != nil {
		return nil, fmt.Errorf("fakeprovider: %w", err)
	}
	if len(s.models) == 0 {
		s.models = defaultModels[opts.Dialect]
	}
	s.rec.limit = opts.RecordLimit
	if s.rec.limit == 0 {
		s.rec.limit = DefaultRecordLimit
	}
	s.faults.set(opts.Faults)
	s.SetUsage(opts.Usage)
	s.SetDrops(opts.Drops)
	if err := s.SetChaos(opts.Chaos); err != nil {
		return nil, fmt.Errorf("fakeprovider: %w", err)
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	s.idSeed = binary.LittleEndian.Uint64(seed[:])
	return s, nil
}

// Dialect returns the API the server speaks.
func (s *Server) Dialect() Dialect { return s.dialect }

// Requests returns the most recent API calls, oldest first. The control
// endpoint's own calls are not recorded.
func (s *Server) Requests() []Recorded { return s.rec.list() }

// Calls counts API calls since the server started or was Reset, failed
// ones included.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Reset forgets recorded requests and zeroes the call counter; faults stay.
func (s *Server) Reset() {
	s.rec.reset()
	s.calls.Store(0)
}

// SetFaults replaces the faults; the count of failures to inject restarts.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	s.faults.set(f)
	return nil
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults { return s.faults.get() }

// openAICompatPath is where Anthropic serves its OpenAI-compatible Chat
// Completions. There it takes the OpenAI SDK's Bearer key (and only that),
// needs no anthropic-version, answers and fails in OpenAI's shapes, and
// drops every capability (see Drops), as its documentation lists.
const openAICompatPath = "/v1/chat/completions"

// exchange is one API call in flight.
type exchange struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	requestID string
	body      []byte
	req       wireRequest
	parseErr  error
	faults    Faults
	active    *activeFaults
	usage     Usage
	drops     Drops
	// compat marks a call to an Anthropic server's OpenAI-compatible layer.
	compat bool
	// keyID is the id of the key the call was authorized with, which the
	// ledger bills.
	keyID string
}

// wire is the dialect the call is answered in.
func (x *exchange) wire() Dialect {
	if x.compat {
		return DialectOpenAI
	}
	return x.s.dialect
}

// ServeHTTP answers API calls under /v1/ and the control endpoint under /_fake/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.serveControl(w, r)
		return
	}
	if s.serveSession(w, r) {
		return
	}
	x := &exchange{s: s, w: w, r: r, requestID: s.newID("req_"),
		compat: s.dialect == DialectAnthropic && r.URL.Path == openAICompatPath}
	s.setResponseHeaders(w.Header(), x.requestID)
	if s.usageAPI(r.URL.Path) {
		// The admin side: neither recorded nor counted, and no faults,
		// which are the traffic's.
		x.serveUsageAPI()
		return
	}
	buf := getBuffer()
	defer putBuffer(buf)
	tooLarge := x.readBody(buf)
	s.rec.add(r, x.body, x.req.Model)
	s.calls.Add(1)

	a, fail := s.faults.take()
	if cs := s.chaos.Load(); cs != nil {
		spoiled, done := cs.spoil(x, a.faults())
		if done {
			return
		}
		if spoiled != nil {
			a, fail = spoiled, spoiled.f.FailStatus != 0
		}
	}
	f := a.faults()
	x.faults, x.active = f, a
	if !sleepCtx(r.Context(), f.FirstByteDelay) {
		return
	}
	usage, usageErr := s.usageFor(r.Header)
	x.usage = usage
	x.drops = s.dropsFor(x.compat)
	switch {
	case fail:
		x.fail(injectedError(f))
	case !x.authorized():
		// authorized has answered.
	case tooLarge:
		x.fail(&apiError{status: http.StatusRequestEntityTooLarge, message: "request body is too large"})
	case usageErr != nil:
		x.fail(usageErr)
	default:
		s.route(r.Method, r.URL.Path)(x)
	}
}

// readBody reads a POST body into buf and decodes the fields the fake reads.
// It reports a body over the size limit.
func (x *exchange) readBody(buf *[]byte) (tooLarge bool) {
	if x.r.Method != http.MethodPost {
		return false
	}
	bb := bytes.NewBuffer((*buf)[:0])
	_, err := bb.ReadFrom(http.MaxBytesReader(x.w, x.r.Body, maxBodyBytes))
	*buf = bb.Bytes()
	x.body = *buf
	if err != nil {
		x.parseErr = err
		return isMaxBytes(err)
	}
	x.parseErr = json.Unmarshal(x.body, &x.req)
	return false
}

func isMaxBytes(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}

// request returns the decoded body, or answers 400 when it was not valid JSON.
func (x *exchange) request() (*wireRequest, bool) {
	if x.parseErr != nil {
		msg := "We could not parse the JSON body of your request: " + x.parseErr.Error()
		if x.wire() == DialectAnthropic {
			msg = "invalid request body: " + x.parseErr.Error()
		}
		x.fail(badRequest(msg, ""))
		return nil, false
	}
	return &x.req, true
}

// route picks the handler for a call.
func (s *Server) route(method, path string) func(*exchange) {
	post, get := method == http.MethodPost, method == http.MethodGet
	if s.dialect == DialectAnthropic {
		switch {
		case post && path == "/v1/messages":
			return (*exchange).messages
		case post && path == "/v1/messages/count_tokens":
			return (*exchange).countTokens
		case get && path == "/v1/models":
			return (*exchange).anthropicModels
		case get && strings.HasPrefix(path, "/v1/models/"):
			return (*exchange).anthropicModel
		case post && path == openAICompatPath:
			return (*exchange).chatCompletions
		}
		return (*exchange).notFound
	}
	switch {
	case post && path == "/v1/chat/completions":
		return (*exchange).chatCompletions
	case post && path == "/v1/completions":
		return (*exchange).completions
	case post && path == "/v1/embeddings":
		return (*exchange).embeddings
	case post && path == "/v1/responses":
		return (*exchange).responses
	case get && path == "/v1/models":
		return (*exchange).openAIModels
	case get && strings.HasPrefix(path, "/v1/models/"):
		return (*exchange).openAIModel
	}
	return (*exchange).notFound
}

func (x *exchange) notFound() {
	msg := "Not Found"
	if x.s.dialect == DialectOpenAI {
		msg = "Invalid URL (" + x.r.Method + " " + x.r.URL.Path + ")"
	}
	x.fail(&apiError{status: http.StatusNotFound, message: msg})
}

// Headers every response carries: the request id the SDKs surface, and the
// rate-limit headers a gateway is expected to relay.
var (
	openAIStaticHeaders = http.Header{
		"X-Ratelimit-Limit-Requests":     {"10000"},
		"X-Ratelimit-Remaining-Requests": {"9999"},
		"X-Ratelimit-Reset-Requests":     {"6ms"},
		"Openai-Version":                 {"2020-10-01"},
	}
	anthropicStaticHeaders = http.Header{
		"Anthropic-Ratelimit-Requests-Limit":     {"4000"},
		"Anthropic-Ratelimit-Requests-Remaining": {"3999"},
	}
)

func (s *Server) setResponseHeaders(h http.Header, requestID string) {
	static, idHeader := openAIStaticHeaders, "X-Request-Id"
	if s.dialect == DialectAnthropic {
		static, idHeader = anthropicStaticHeaders, "Request-Id"
	}
	for k, v := range static {
		h[k] = v
	}
	h[idHeader] = []string{requestID}
}

// newID returns prefix followed by 24 hex digits, unique per server.
func (s *Server) newID(prefix string) string {
	n := s.ids.Add(1)
	// A multiplicative mix keeps successive ids from looking sequential.
	hi := (n ^ s.idSeed) * 0x9e3779b97f4a7c15
	b := make([]byte, 0, len(prefix)+24)
	b = append(b, prefix...)
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[(hi>>shift)&0xf])
	}
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[(n>>shift)&0xf])
	}
	return string(b)
}
