package fakeprovider

import (
	"net/http"
	"strconv"
	"time"

	"github.com/pistra/pistra/runtime/dialect/anthropic"
	"github.com/pistra/pistra/runtime/dialect/openai"
)

// apiError is a failure answered in the call's dialect:
// OpenAI {"error":{"message","type","param","code"}},
// Anthropic {"type":"error","error":{"type","message"},"request_id"}.
type apiError struct {
	status  int
	message string
	// kind overrides the error type derived from the status.
	kind string
	// param and code appear in OpenAI errors only.
	param string
	code  string
	// retryAfter, when set, is sent as retry-after and retry-after-ms.
	retryAfter time.Duration
}

func badRequest(message, param string) *apiError {
	return &apiError{status: http.StatusBadRequest, message: message, param: param}
}

// openAIErrorType maps a status to the error.type and default code OpenAI
// sends with it.
func openAIErrorType(status int) (kind, code string) {
	switch status {
	case http.StatusUnauthorized:
		code = "invalid_api_key"
	case http.StatusTooManyRequests:
		code = "rate_limit_exceeded"
	}
	return openai.ErrorType(status), code
}

// fail writes e as the response.
func (x *exchange) fail(e *apiError) {
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		ms := e.retryAfter.Milliseconds()
		h.Set("Retry-After-Ms", strconv.FormatInt(max(ms, 1), 10))
		secs := (e.retryAfter + time.Second - 1) / time.Second
		h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	buf := getBuffer()
	defer putBuffer(buf)
	b := (*buf)[:0]
	if x.wire() == DialectAnthropic {
		b = appendAnthropicError(b, e, x.requestID)
	} else {
		b = appendOpenAIError(b, e)
	}
	*buf = b
	x.writeBody(e.status, b)
}

func appendOpenAIError(b []byte, e *apiError) []byte {
	kind, code := openAIErrorType(e.status)
	if e.kind != "" {
		kind = e.kind
	}
	if e.code != "" {
		code = e.code
	}
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, e.message)
	b = append(b, `,"type":`...)
	b = appendString(b, kind)
	b = append(b, `,"param":`...)
	b = appendStringOrNull(b, e.param)
	b = append(b, `,"code":`...)
	b = appendStringOrNull(b, code)
	return append(b, "}}"...)
}

func appendAnthropicError(b []byte, e *apiError, requestID string) []byte {
	kind := e.kind
	if kind == "" {
		kind = anthropic.ErrorType(e.status)
	}
	b = append(b, `{"type":"error","error":{"type":`...)
	b = appendString(b, kind)
	b = append(b, `,"message":`...)
	b = appendString(b, e.message)
	b = append(b, `},"request_id":`...)
	b = appendString(b, requestID)
	return append(b, '}')
}

// injectedError is the error a fault-injected call gets.
func injectedError(f Faults) *apiError {
	e := &apiError{
		status:  f.FailStatus,
		message: "fake provider: injected failure (" + http.StatusText(f.FailStatus) + ")",
	}
	switch f.FailStatus {
	case http.StatusTooManyRequests:
		e.retryAfter = f.RetryAfter
		if e.retryAfter == 0 {
			e.retryAfter = time.Second
		}
	case 529:
		e.message = "Overloaded"
	default:
		e.retryAfter = f.RetryAfter
	}
	return e
}
