package proxy

import (
	"fmt"
	"net/http"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
	"github.com/pistra/pistra/runtime/upstream"
)

// Translated candidates reach a provider that speaks only the other
// dialect, through runtime/translate. This file builds their upstream
// request; translated_relay.go answers the client from their response.
// Same-dialect candidates never come here.

// identityEncoding asks the upstream not to compress: a translator reads
// the body, and the transport decodes nothing.
var identityEncoding = []string{"identity"}

// translation is the upstream body prepared for a translated candidate. It
// is built once and kept for the candidate's retries and for any later
// candidate needing the same translation (same pair and options).
type translation struct {
	of     plan.Translation
	pair   translate.Pair
	opts   translate.Options
	buf    *[]byte // pooled; recycled by Body.Release
	stream bool    // the client asked to stream
	ready  bool
}

// upstreamDialect is the dialect a translation pair writes.
func upstreamDialect(t plan.Translation) plan.Dialect {
	return t.Upstream(t.Inbound()).Dialect()
}

// prepareTranslation makes x's body hold c's upstream body when c is
// translated. A request the translator refuses is the client's to fix.
func (x *Exchange) prepareTranslation(c *plan.Candidate, up *upstream.Upstream) *dialect.Error {
	if c.Translate == plan.TranslateNone {
		return nil
	}
	pair := translate.For(c.Translate)
	if err := x.Body.translate(c.Translate, pair, pair.Options(up.Target(c), x.Client.Header)); err != nil {
		return &dialect.Error{Status: http.StatusBadRequest, Code: dialect.CodeUntranslatable,
			Message: fmt.Sprintf("the request cannot be translated for an %s-dialect upstream: %v", upstreamDialect(c.Translate), err)}
	}
	return nil
}

// translate fills b.xlat with the client's body translated by pair (the
// one serving of), unless it already holds that translation.
func (b *Body) translate(of plan.Translation, pair translate.Pair, o translate.Options) error {
	t := &b.xlat
	if t.ready && t.of == of && t.opts == o {
		return nil
	}
	if t.buf == nil || b.writes.pending.Load() != 0 {
		// A transport may still read the old translation: start a fresh
		// buffer and let the collector have the old.
		t.buf = GetBuffer()
	}
	t.ready = false
	out, stream, err := pair.Request((*t.buf)[:0], *b.raw, o)
	if err != nil {
		return err
	}
	*t.buf = out
	t.of, t.pair, t.opts, t.stream, t.ready = of, pair, o, stream, true
	return nil
}

// fitTranslatedHeaders fits an upstream request's headers to a translated
// body: the pair fits them to the upstream's dialect, and no compression is
// accepted, since the translator reads the answer and the transport decodes
// nothing.
func fitTranslatedHeaders(h http.Header, t *translation) {
	t.pair.FitHeaders(h, t.opts)
	h["Accept-Encoding"] = identityEncoding
}
