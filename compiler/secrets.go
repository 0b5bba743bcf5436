package compiler

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"cuelang.org/go/cue"
)

// A static header or query parameter is written into the policy and into
// gen/, so a secret there is leaked to everyone who reads either. These
// are what gives one away: the parameter's name, a vendor's key prefix,
// an HTTP auth scheme, or a long random token.
var (
	// secretWords are name parts ("x-goog-api-key" is x, goog, api, key)
	// that mark a header or parameter as carrying a credential when the
	// name ends in one: "x-cache-key-prefix" names a prefix, not a key.
	secretWords = []string{"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials",
		"authorization", "sig", "signature"}
	// keyQualifiers make a name ending in "key" the name of a lookup key
	// (idempotency-key, prompt_cache_key), which is no credential.
	keyQualifiers = []string{"cache", "idempotency", "routing", "partition", "dedup", "dedupe", "sort", "shard", "lookup"}
	// idHeaders are well-known headers whose values are request or trace
	// ids: random by design, so the long-random-token rule is not applied
	// to them (a key prefix or an auth scheme in them still is).
	idHeaders = []string{"traceparent", "tracestate", "baggage", "request-id", "x-request-id", "x-client-request-id",
		"x-correlation-id", "idempotency-key", "x-idempotency-key", "x-amzn-trace-id", "x-cloud-trace-context",
		"b3", "x-b3-traceid", "x-b3-spanid", "x-b3-parentspanid", "x-datadog-trace-id", "x-datadog-parent-id"}
	// secretPrefixes are the published prefixes of providers' API keys.
	secretPrefixes = []struct{ prefix, whose string }{
		{"sk-ant-", "an Anthropic API key"},
		{"sk-", "an OpenAI-style secret key"},
		{"AIza", "a Google API key"},
		{"xai-", "an xAI API key"},
		{"gsk_", "a Groq API key"},
		{"pplx-", "a Perplexity API key"},
		{"hf_", "a Hugging Face token"},
		{"ghp_", "a GitHub token"},
		{"github_pat_", "a GitHub token"},
	}
	authSchemes = []string{"bearer", "basic"}
	// commitPath is a Git commit id as a URL path segment (a permalink
	// cited in verified_by): random hex, and no secret.
	commitPath = regexp.MustCompile(`/[0-9a-f]{40}(?:[/#?]|$)`)
)

// minPrefixedSecret keeps a short value that merely starts like a key
// ("sk-1") from being refused; real keys are far longer. minSchemeSecret
// is the same for the credential after "Bearer" in free text ("bearer
// auth" is words, not a token).
const (
	minPrefixedSecret = 20
	minSchemeSecret   = 16
)

// staticSecret refuses a static header or query parameter (what says
// which) that looks like it holds a secret. The value is never echoed,
// since it would be the secret.
func (c *compiler) staticSecret(at cue.Path, what, name, value string) {
	if why, secret := looksSecret(name, value); secret {
		c.errorf(at, "%s %q %s; a secret must not be written in the policy (it is copied into gen/): "+
			"put it in an environment variable and name that in credential_env (auth says how it is sent)", what, name, why)
	}
}

// textSecret refuses a secret in free text the gateway shows to clients
// (a claim's verified_by and origin, an access rule's message), by the
// value alone: what the field says is for people, whatever it is called.
func (c *compiler) textSecret(at cue.Path, field, text, shown string) {
	if why, secret := secretIn(text, true); secret {
		c.errorf(at, "%s %s; it is copied into gen/ and %s, so it must not hold a credential: write it without the secret", field, why, shown)
	}
}

// looksSecret reports whether a static header or parameter looks like a
// credential, by its name or its value, and why, in words that do not
// repeat the value.
func looksSecret(name, value string) (string, bool) {
	lower := strings.ToLower(name)
	words := strings.FieldsFunc(lower, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	if n := len(words); n > 0 && slices.Contains(secretWords, words[n-1]) &&
		!(words[n-1] == "key" && n > 1 && slices.Contains(keyQualifiers, words[n-2])) {
		return fmt.Sprintf("is named like a credential (%q)", words[n-1]), true
	}
	if why, secret := authScheme(value); secret {
		return why, true
	}
	return secretIn(value, !slices.Contains(idHeaders, lower))
}

// valueLooksSecret reports a value that looks like a credential whatever
// it is called.
func valueLooksSecret(value string) (string, bool) {
	if why, secret := authScheme(value); secret {
		return why, true
	}
	return secretIn(value, true)
}

// authScheme reports a value that is an HTTP Authorization credential.
func authScheme(value string) (string, bool) {
	lower := strings.ToLower(value)
	for _, s := range authSchemes {
		if strings.HasPrefix(lower, s+" ") {
			return fmt.Sprintf("holds an HTTP %q credential", value[:len(s)]), true
		}
	}
	return "", false
}

// secretIn looks for a credential among the words of a value: a word
// that starts with a vendor's key prefix, a long word after an auth
// scheme, and (when random is set) a long random token.
func secretIn(value string, random bool) (string, bool) {
	words := strings.FieldsFunc(value, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("?&=/:,;'\"()<>[]{}|`#", r) })
	for i, w := range words {
		for _, p := range secretPrefixes {
			if strings.HasPrefix(w, p.prefix) && len(w) >= minPrefixedSecret {
				where := "it starts"
				if !strings.HasPrefix(value, w) {
					where = "a word in it starts"
				}
				return fmt.Sprintf("holds what looks like %s (%s with %q)", p.whose, where, p.prefix), true
			}
		}
		if i+1 < len(words) && slices.Contains(authSchemes, strings.ToLower(w)) && len(words[i+1]) >= minSchemeSecret {
			return fmt.Sprintf("holds an HTTP %q credential", w), true
		}
	}
	if random && randomToken(commitPath.ReplaceAllString(value, "/")) {
		return "holds what looks like a secret (a long random token)", true
	}
	return "", false
}

// randomToken reports a value holding a run of 32 or more letters and
// digits, both mixed, with the entropy of random text: words, dates,
// versions and the ids providers put in headers (org-..., proj_...) are
// broken up by separators or shorter.
func randomToken(v string) bool {
	for _, run := range strings.FieldsFunc(v, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(run) >= 32 && strings.ContainsFunc(run, unicode.IsLetter) && strings.ContainsFunc(run, unicode.IsDigit) && entropy(run) >= 3 {
			return true
		}
	}
	return false
}

// entropy is the Shannon entropy of v's bytes, in bits per byte.
func entropy(v string) float64 {
	var counts [256]int
	for i := 0; i < len(v); i++ {
		counts[v[i]]++
	}
	var h float64
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h
}
