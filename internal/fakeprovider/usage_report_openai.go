package fakeprovider

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// openAIQuery reads an OpenAI organization usage call: start_time
// (required) and end_time in Unix seconds, arrays as group_by[]=x (the
// official SDK's form) or repeated group_by=x.
func (x *exchange) openAIQuery() (reportQuery, *apiError) {
	v := x.r.URL.Query()
	product := strings.TrimPrefix(x.r.URL.Path, openAIUsagePrefix)
	from, err := unixParam(v, "start_time", -1)
	if err != nil {
		return reportQuery{}, err
	}
	to, err := unixParam(v, "end_time", x.s.now().Unix())
	if err != nil {
		return reportQuery{}, err
	}
	q, err := bucketRange(v, from, to)
	if err != nil {
		return q, err
	}
	q.product = product
	allowed := []string{"project_id", "user_id", "api_key_id", "model"}
	if product == productCompletions {
		allowed = append(allowed, "batch", "service_tier", "api_source")
	}
	if q.group, err = groupBy(openAIArray(v, "group_by"), allowed...); err != nil {
		return q, err
	}
	q.models, q.keyIDs = openAIArray(v, "models"), openAIArray(v, "api_key_ids")
	return q, nil
}

// openAIArray is an array parameter in either form the API is sent.
func openAIArray(v url.Values, name string) []string {
	return append(append([]string(nil), v[name+"[]"]...), v[name]...)
}

// unixParam reads a Unix-seconds parameter; def < 0 makes it required.
func unixParam(v url.Values, name string, def int64) (int64, *apiError) {
	s := v.Get(name)
	if s == "" {
		if def < 0 {
			return 0, badRequest("Missing required parameter: '"+name+"'.", name)
		}
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("Invalid '"+name+"': expected Unix seconds.", name)
	}
	return n, nil
}

type openAIUsagePage struct {
	Object   string              `json:"object"`
	Data     []openAIUsageBucket `json:"data"`
	HasMore  bool                `json:"has_more"`
	NextPage *string             `json:"next_page"`
}

type openAIUsageBucket struct {
	Object    string `json:"object"`
	StartTime int64  `json:"start_time"`
	EndTime   int64  `json:"end_time"`
	Results   []any  `json:"results"`
}

// openAIGroups are the grouped fields every result carries, null unless
// grouped by.
type openAIGroups struct {
	ProjectID *string `json:"project_id"`
	UserID    *string `json:"user_id"`
	APIKeyID  *string `json:"api_key_id"`
	Model     *string `json:"model"`
}

type openAICompletionsResult struct {
	Object                string `json:"object"`
	InputTokens           int64  `json:"input_tokens"`
	InputCachedTokens     int64  `json:"input_cached_tokens"`
	InputCacheWriteTokens int64  `json:"input_cache_write_tokens"`
	InputUncachedTokens   int64  `json:"input_uncached_tokens"`
	OutputTokens          int64  `json:"output_tokens"`
	NumModelRequests      int64  `json:"num_model_requests"`
	openAIGroups
	Batch       *bool   `json:"batch"`
	ServiceTier *string `json:"service_tier"`
}

type openAIEmbeddingsResult struct {
	Object           string `json:"object"`
	InputTokens      int64  `json:"input_tokens"`
	NumModelRequests int64  `json:"num_model_requests"`
	openAIGroups
}

func openAIPage(p *page, q reportQuery) openAIUsagePage {
	out := openAIUsagePage{Object: "page", Data: make([]openAIUsageBucket, 0, len(p.buckets)), HasMore: p.next != 0}
	if p.next != 0 {
		c := encodeCursor(p.next)
		out.NextPage = &c
	}
	for _, b := range p.buckets {
		ob := openAIUsageBucket{Object: "bucket", StartTime: b.start, EndTime: b.start + q.width, Results: []any{}}
		for _, k := range sortedGroups(b.sums) {
			ob.Results = append(ob.Results, openAIResult(q, k, b.sums[k]))
		}
		out.Data = append(out.Data, ob)
	}
	return out
}

func openAIResult(q reportQuery, k billKey, s reported) any {
	g := openAIGroups{}
	if q.group["model"] {
		g.Model = &k.model
	}
	if q.group["api_key_id"] {
		g.APIKeyID = nullable(k.keyID)
	}
	if q.group["project_id"] {
		p := Project
		g.ProjectID = &p
	}
	if q.product == productEmbeddings {
		return openAIEmbeddingsResult{Object: "organization.usage.embeddings.result", InputTokens: s.input(), NumModelRequests: s.requests, openAIGroups: g}
	}
	r := openAICompletionsResult{Object: "organization.usage.completions.result",
		InputTokens: s.input(), InputCachedTokens: s.cached, InputCacheWriteTokens: s.cacheWrite,
		InputUncachedTokens: s.uncached, OutputTokens: s.output, NumModelRequests: s.requests, openAIGroups: g}
	if q.group["batch"] {
		f := false
		r.Batch = &f
	}
	if q.group["service_tier"] {
		t := "default"
		r.ServiceTier = &t
	}
	return r
}

// nullable is s, or null when it is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// sortedGroups orders a bucket's groups so pages read the same twice.
func sortedGroups(m map[billKey]reported) []billKey {
	keys := make([]billKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].model != keys[j].model {
			return keys[i].model < keys[j].model
		}
		if keys[i].keyID != keys[j].keyID {
			return keys[i].keyID < keys[j].keyID
		}
		return keys[i].workspace < keys[j].workspace
	})
	return keys
}
