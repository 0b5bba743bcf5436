package fakeprovider

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// defaultModels are listed when Options.Models is empty.
var defaultModels = map[Dialect][]string{
	DialectOpenAI:    {"gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "o4-mini", "text-embedding-3-small", "gpt-3.5-turbo-instruct"},
	DialectAnthropic: {"claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-1"},
}

// modelCreated is the creation time every listed model reports.
const (
	modelCreatedUnix    = 1721172741
	modelCreatedRFC3339 = "2024-07-16T23:32:21Z"
)

// GET /v1/models (OpenAI)
func (x *exchange) openAIModels() {
	buf := getBuffer()
	defer putBuffer(buf)
	b := append((*buf)[:0], `{"object":"list","data":[`...)
	for i, id := range x.s.models {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOpenAIModel(b, id)
	}
	*buf = append(b, "]}"...)
	x.writeBody(http.StatusOK, *buf)
}

// GET /v1/models/{id} (OpenAI)
func (x *exchange) openAIModel() {
	id := strings.TrimPrefix(x.r.URL.Path, "/v1/models/")
	if !slices.Contains(x.s.models, id) {
		x.fail(&apiError{status: http.StatusNotFound, param: "model", code: "model_not_found",
			message: "The model '" + id + "' does not exist or you do not have access to it."})
		return
	}
	x.writeBody(http.StatusOK, appendOpenAIModel(nil, id))
}

func appendOpenAIModel(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":"model","created":`+strconv.Itoa(modelCreatedUnix)+`,"owned_by":"system"}`...)
	return b
}

// GET /v1/models (Anthropic), paged by limit, after_id and before_id.
func (x *exchange) anthropicModels() {
	q := x.r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			x.fail(badRequest("limit: must be an integer between 1 and 1000", ""))
			return
		}
		limit = n
	}
	page := x.s.models
	if after := q.Get("after_id"); after != "" {
		page = page[slices.Index(page, after)+1:]
	}
	if before := q.Get("before_id"); before != "" {
		if i := slices.Index(page, before); i >= 0 {
			page = page[max(i-limit, 0):i]
		}
	}
	hasMore := len(page) > limit
	page = page[:min(limit, len(page))]
	buf := getBuffer()
	defer putBuffer(buf)
	b := append((*buf)[:0], `{"data":[`...)
	for i, id := range page {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAnthropicModel(b, id)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, hasMore)
	first, last := "", ""
	if len(page) > 0 {
		first, last = page[0], page[len(page)-1]
	}
	b = append(b, `,"first_id":`...)
	b = appendStringOrNull(b, first)
	b = append(b, `,"last_id":`...)
	b = appendStringOrNull(b, last)
	*buf = append(b, '}')
	x.writeBody(http.StatusOK, *buf)
}

// GET /v1/models/{id} (Anthropic)
func (x *exchange) anthropicModel() {
	id := strings.TrimPrefix(x.r.URL.Path, "/v1/models/")
	if !slices.Contains(x.s.models, id) {
		x.fail(&apiError{status: http.StatusNotFound, message: "model: " + id})
		return
	}
	x.writeBody(http.StatusOK, appendAnthropicModel(nil, id))
}

func appendAnthropicModel(b []byte, id string) []byte {
	b = append(b, `{"type":"model","id":`...)
	b = appendString(b, id)
	b = append(b, `,"display_name":`...)
	b = appendString(b, id)
	b = append(b, `,"created_at":"`+modelCreatedRFC3339+`","lifecycle":"active","deprecated_at":null,"retires_at":null,"max_input_tokens":200000,"max_tokens":64000}`...)
	return b
}
