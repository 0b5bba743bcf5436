package fakeprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The fake keeps a ledger of what it billed, as a provider does: every
// answer it served adds its tokens to the minute it was served in, under
// the model it answered as and the id of the key that paid. Its admin usage
// APIs (usage_report.go) report from this ledger, so what they say is what
// the fake actually answered, unless a Report knob says otherwise.

// Usage products the ledger keeps apart, as the usage APIs do.
const (
	productCompletions = "completions"
	productEmbeddings  = "embeddings"
	productMessages    = "messages"
)

// Project is the one project (OpenAI) the fake's keys belong to.
const Project = "proj_fakeprovider"

type billKey struct {
	minute  int64 // Unix seconds of the minute's start
	product string
	model   string
	keyID   string
	// workspace is the key's workspace ("" the default one).
	workspace string
}

// billed is one row of the ledger. input is every input token, cached
// reads and cache writes included, whatever the dialect's own convention.
type billed struct {
	requests, input, cached, cacheWrite, output int64
}

func (b *billed) add(o billed) {
	b.requests += o.requests
	b.input += o.input
	b.cached += o.cached
	b.cacheWrite += o.cacheWrite
	b.output += o.output
}

type ledger struct {
	mu   sync.Mutex
	rows map[billKey]*billed
}

func (l *ledger) add(k billKey, b billed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rows == nil {
		l.rows = make(map[billKey]*billed)
	}
	r := l.rows[k]
	if r == nil {
		r = &billed{}
		l.rows[k] = r
	}
	r.add(b)
}

// sum adds up the rows of product in [from, to) that keep admits, by the
// key group makes of each.
func (l *ledger) sum(product string, from, to int64, keep func(billKey) bool, group func(billKey) billKey) map[billKey]billed {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[billKey]billed)
	for k, r := range l.rows {
		if k.product != product || k.minute < from || k.minute >= to || !keep(k) {
			continue
		}
		g := group(k)
		b := out[g]
		b.add(*r)
		out[g] = b
	}
	return out
}

// KeyID is the id the fake's usage APIs report the key secret under: a
// digest of it, as a provider names a key by an id that is not the secret.
// A policy's usage_api.key_id for a fake provider is this.
func KeyID(d Dialect, secret string) string {
	sum := sha256.Sum256([]byte(secret))
	prefix := "key_"
	if d == DialectAnthropic {
		prefix = "apikey_"
	}
	return prefix + hex.EncodeToString(sum[:8])
}

// bill enters one served answer in the ledger: input counts every input
// token (cached reads and writes included), output every output token
// (reasoning included).
func (x *exchange) bill(model string, input, cached, cacheWrite, output int) {
	product := productCompletions
	switch {
	case x.s.dialect == DialectAnthropic:
		product = productMessages
	case x.r.URL.Path == "/v1/embeddings":
		product = productEmbeddings
	}
	now := x.s.now().Unix()
	k := billKey{minute: now - now%60, product: product, model: model, keyID: x.keyID, workspace: x.s.workspaces[x.keyID]}
	x.s.ledger.add(k, billed{requests: 1, input: int64(input), cached: int64(cached), cacheWrite: int64(cacheWrite), output: int64(output)})
}

// billOpenAI bills an OpenAI-dialect answer: cached tokens are part of
// the prompt, reasoning part of the completion, as the ledger keeps them.
func (x *exchange) billOpenAI(model string, u openAIUsage) {
	x.bill(model, u.prompt, u.cached, 0, u.completion)
}

// Report bends what the usage APIs report away from what the fake billed,
// so a reconcile can be shown each kind of disagreement.
type Report struct {
	// Skew multiplies one token class by Factor when reported.
	Skew *Skew `json:"skew,omitempty"`
	// DropDays are UTC days (YYYY-MM-DD) reported as having no usage.
	DropDays []string `json:"drop_days,omitempty"`
	// LagHours hides the most recent hours: buckets starting after now
	// less the lag are not returned yet and the usage after it is not in
	// the bucket that holds it, as a provider's usage trails its traffic.
	LagHours int `json:"lag_hours,omitempty"`
}

// Skew names a token class and the factor it is reported at.
type Skew struct {
	// Class is one of input (for Anthropic, the uncached input),
	// cached_input, cache_creation, output.
	Class  string  `json:"class"`
	Factor float64 `json:"factor"`
}

var skewClasses = []string{"input", "cached_input", "cache_creation", "output"}

// Validate reports a knob the usage APIs cannot apply.
func (r Report) Validate() error {
	if r.Skew != nil {
		if !slices.Contains(skewClasses, r.Skew.Class) {
			return fmt.Errorf("report skew: class %q is not one of %s", r.Skew.Class, strings.Join(skewClasses, ", "))
		}
		if r.Skew.Factor < 0 {
			return errors.New("report skew: factor must not be negative")
		}
	}
	for _, d := range r.DropDays {
		if _, err := time.Parse(time.DateOnly, d); err != nil {
			return fmt.Errorf("report drop_days: %w", err)
		}
	}
	if r.LagHours < 0 {
		return errors.New("report lag_hours must not be negative")
	}
	return nil
}

// ParseSkew reads CLASS=FACTOR, as the -report-skew flag takes it.
func ParseSkew(s string) (*Skew, error) {
	class, f, ok := strings.Cut(s, "=")
	if !ok {
		return nil, fmt.Errorf("skew %q: want CLASS=FACTOR", s)
	}
	sk := &Skew{Class: class}
	if _, err := fmt.Sscanf(f, "%g", &sk.Factor); err != nil {
		return nil, fmt.Errorf("skew %q: factor: %w", s, err)
	}
	return sk, Report{Skew: sk}.Validate()
}

// SetReport replaces the report knobs.
func (s *Server) SetReport(r Report) error {
	if err := r.Validate(); err != nil {
		return err
	}
	s.report.Store(&r)
	return nil
}

// Report returns the report knobs in force.
func (s *Server) Report() Report { return *s.report.Load() }

// reported is a row as the usage APIs report it: the input split into
// uncached, cached reads and cache writes, with the skew applied to its
// class. The total input is then the sum of the three, as both APIs keep it.
type reported struct {
	requests, uncached, cached, cacheWrite, output int64
}

func (r reported) input() int64 { return r.uncached + r.cached + r.cacheWrite }

func (r *Report) reported(b billed) reported {
	out := reported{requests: b.requests, uncached: b.input - b.cached - b.cacheWrite, cached: b.cached, cacheWrite: b.cacheWrite, output: b.output}
	if r.Skew == nil {
		return out
	}
	f := func(v int64) int64 { return int64(float64(v)*r.Skew.Factor + 0.5) }
	switch r.Skew.Class {
	case "input":
		out.uncached = f(out.uncached)
	case "cached_input":
		out.cached = f(out.cached)
	case "cache_creation":
		out.cacheWrite = f(out.cacheWrite)
	case "output":
		out.output = f(out.output)
	}
	return out
}

func (r *Report) dropped(day int64) bool {
	return slices.Contains(r.DropDays, time.Unix(day, 0).UTC().Format(time.DateOnly))
}
