package translate

import (
	"bytes"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/pistra/pistra/runtime/dialect/anthropic"
)

// Error vocabulary shared by both pairs.

// maxFallbackMessage bounds how much of an unparseable upstream error body is
// quoted back to the client.
const maxFallbackMessage = 512

// fallbackMessage is the message for an upstream error body that is not in
// the upstream's error shape (a proxy's HTML page, plain text): the body
// itself when short and textual, else the status.
func fallbackMessage(status int, body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && len(body) <= maxFallbackMessage && utf8.Valid(body) {
		return string(body)
	}
	return fmt.Sprintf("upstream returned HTTP %d %s", status, http.StatusText(status))
}

// openAIErrorType names an Anthropic error type in OpenAI's vocabulary:
// server-side failures are server_error, as OpenAI types its 5xx; the rest
// keep their Anthropic name, which an OpenAI client only displays.
func openAIErrorType(antType string) string {
	switch antType {
	case "api_error", "overloaded_error", "timeout_error", "":
		return "server_error"
	}
	return antType
}

// anthropicErrorType names the Anthropic error type for an upstream
// OpenAI status. A 503 reads as overloaded to an Anthropic client, which is
// what Anthropic itself would have said.
func anthropicErrorType(status int) string {
	if status == http.StatusServiceUnavailable {
		return "overloaded_error"
	}
	return anthropic.ErrorType(status)
}

// anthropicErrorTypeOf names the Anthropic error type for an OpenAI error
// seen mid-stream, where there is no status to go by.
func anthropicErrorTypeOf(oaiType, oaiCode string) string {
	switch {
	case oaiType == "invalid_request_error":
		return "invalid_request_error"
	case oaiCode == "rate_limit_exceeded", oaiType == "requests", oaiType == "tokens":
		return "rate_limit_error"
	case oaiCode == "insufficient_quota", oaiType == "insufficient_quota":
		return "billing_error"
	}
	return "api_error"
}
