package compiler

import (
	"fmt"
	"math"
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
	// that mark a header or parameter as carrying a credential.
	secretWords = []string{"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials",
		"authorization", "sig", "signature"}
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
	authSchemes = []string{"bearer ", "basic "}
)

// minPrefixedSecret keeps a short value that merely starts like a key
// ("sk-1") from being refused; real keys are far longer.
const minPrefixedSecret = 20

// staticSecret refuses a static header or query parameter (what says
// which) that looks like it holds a secret. The value is never echoed,
// since it would be the secret.
func (c *compiler) staticSecret(at cue.Path, what, name, value string) {
	if why, secret := looksSecret(name, value); secret {
		c.errorf(at, "%s %q %s; a secret must not be written in the policy (it is copied into gen/): "+
			"put it in an environment variable and name that in credential_env (auth says how it is sent)", what, name, why)
	}
}

// looksSecret reports whether a static header or parameter looks like a
// credential, by its name or its value, and why, in words that do not
// repeat the value.
func looksSecret(name, value string) (string, bool) {
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	for _, w := range words {
		if slices.Contains(secretWords, w) {
			return fmt.Sprintf("is named like a credential (%q)", w), true
		}
	}
	return valueLooksSecret(value)
}

// valueLooksSecret reports a value that looks like a credential whatever
// it is called.
func valueLooksSecret(value string) (string, bool) {
	lower := strings.ToLower(value)
	for _, s := range authSchemes {
		if strings.HasPrefix(lower, s) {
			return fmt.Sprintf("holds an HTTP %q credential", strings.TrimSpace(value[:len(s)])), true
		}
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(value, p.prefix) && len(value) >= minPrefixedSecret {
			return fmt.Sprintf("holds what looks like %s (it starts with %q)", p.whose, p.prefix), true
		}
	}
	if randomToken(value) {
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
