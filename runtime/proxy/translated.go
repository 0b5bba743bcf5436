package proxy

import (
	"cmp"
	"fmt"
	"net/http"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

// Translated candidates reach a provider that speaks only the other
// dialect, through runtime/translate. This file builds their upstream
// request; translated_relay.go answers the client from their response.
// Same-dialect candidates never come here.

// UsageFromTranslator is Result.UsageFrom when a translator parsed the
// usage from the upstream's response.
const UsageFromTranslator = "translator"

// defaultAnthropicVersion is sent to an Anthropic upstream when neither
// the provider nor the client names one: the version every SDK before the
// 1.0 majors sends, which still accepts temperature and top_p.
const defaultAnthropicVersion = "2023-06-01"

const headerAnthropicVersion = "Anthropic-Version"

// foreignHeaders are the forwarded client headers that mean nothing to an
// upstream of the other dialect, by the dialect they belong to.
var foreignHeaders = map[plan.Dialect][]string{
	plan.DialectAnthropic: {"Anthropic-Version", "Anthropic-Beta"},
}

// identityEncoding asks the upstream not to compress: a translator reads
// the body, and the transport decodes nothing.
var identityEncoding = []string{"identity"}

// translation is the upstream body prepared for a translated candidate. It
// is built once and kept for the candidate's retries and for any later
// candidate needing the same translation (same pair and options).
type translation struct {
	pair   plan.Translation
	opts   translate.Options
	buf    *[]byte // pooled; recycled by Body.Release
	stream bool    // the client asked to stream
	ready  bool
}

// resolveTranslation reads what translated candidates of p need: the static
// anthropic-version, each model's default max_tokens, and whether streams
// may ask for usage.
func (u *Upstream) resolveTranslation(p *plan.Provider) {
	u.streamUsage = p.StreamUsage
	for _, h := range u.headers {
		if h.Name == headerAnthropicVersion {
			u.anthropicVersion = h.Value
		}
	}
	for _, m := range p.Models {
		if m.MaxTokens > 0 {
			if u.maxTokens == nil {
				u.maxTokens = make(map[string]int64, len(p.Models))
			}
			u.maxTokens[m.Name] = m.MaxTokens
		}
	}
}

// upstreamDialect is the dialect a translation pair writes.
func upstreamDialect(t plan.Translation) plan.Dialect {
	return t.Upstream(t.Inbound()).Dialect()
}

// translateOptions is what the translator needs for candidate c: its model,
// and for an Anthropic upstream the model's default max_tokens and the
// anthropic-version the request will carry (the provider's, else the
// client's, else the default), which decides whether sampling parameters
// may be sent.
func (u *Upstream) translateOptions(c *plan.Candidate, client http.Header) translate.Options {
	o := translate.Options{UpstreamModel: c.Model}
	if c.Translate == plan.TranslateOpenAIAnthropic {
		o.DefaultMaxTokens = u.maxTokens[c.Model]
		o.AnthropicVersion = cmp.Or(u.anthropicVersion, client.Get(headerAnthropicVersion), defaultAnthropicVersion)
	} else {
		o.OmitStreamUsage = !u.streamUsage
	}
	return o
}

// prepareTranslation makes x's body hold c's upstream body when c is
// translated. A request the translator refuses is the client's to fix.
func (x *Exchange) prepareTranslation(c *plan.Candidate, up *Upstream) *dialect.Error {
	if c.Translate == plan.TranslateNone {
		return nil
	}
	if err := x.Body.translate(c.Translate, up.translateOptions(c, x.Client.Header)); err != nil {
		return &dialect.Error{Status: http.StatusBadRequest, Code: dialect.CodeUntranslatable,
			Message: fmt.Sprintf("the request cannot be translated for an %s-dialect upstream: %v", upstreamDialect(c.Translate), err)}
	}
	return nil
}

// translate fills b.xlat with the client's body translated by pair, unless
// it already holds that translation.
func (b *Body) translate(pair plan.Translation, o translate.Options) error {
	t := &b.xlat
	if t.ready && t.pair == pair && t.opts == o {
		return nil
	}
	if t.buf == nil || b.writes.pending.Load() != 0 {
		// A transport may still read the old translation: start a fresh
		// buffer and let the collector have the old.
		t.buf = GetBuffer()
	}
	t.ready = false
	var out []byte
	var err error
	switch pair {
	case plan.TranslateOpenAIAnthropic:
		out, t.stream, err = translate.OpenAIToAnthropicRequest((*t.buf)[:0], *b.raw, o)
	case plan.TranslateAnthropicOpenAI:
		out, t.stream, err = translate.AnthropicToOpenAIRequest((*t.buf)[:0], *b.raw, o)
	default:
		err = fmt.Errorf("no translator for %q", pair)
	}
	if err != nil {
		return err
	}
	*t.buf = out
	t.pair, t.opts, t.ready = pair, o, true
	return nil
}

// fitTranslatedHeaders fits an upstream request's headers to the
// upstream's dialect: the client's headers of its own dialect are dropped
// (unless the provider sets them statically), an Anthropic upstream gets
// the anthropic-version the body was translated for, and no compression is
// accepted.
func fitTranslatedHeaders(h http.Header, t *translation, up *Upstream) {
	for _, k := range foreignHeaders[t.pair.Inbound().Dialect()] {
		if !up.hasStaticHeader(k) {
			delete(h, k)
		}
	}
	if t.pair == plan.TranslateOpenAIAnthropic {
		h[headerAnthropicVersion] = []string{t.opts.AnthropicVersion}
	}
	h["Accept-Encoding"] = identityEncoding
}

// hasStaticHeader reports whether the provider sets header k (canonical).
func (u *Upstream) hasStaticHeader(k string) bool {
	for _, h := range u.headers {
		if h.Name == k {
			return true
		}
	}
	return false
}
