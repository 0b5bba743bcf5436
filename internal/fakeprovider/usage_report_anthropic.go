package fakeprovider

import (
	"net/url"
	"time"
)

// anthropicQuery reads a messages usage report call: starting_at
// (required) and ending_at in RFC 3339, snapped to the bucket's UTC start;
// arrays in bracket keys only (group_by[]=model), as the API takes them.
func (x *exchange) anthropicQuery() (reportQuery, *apiError) {
	v := x.r.URL.Query()
	for _, bare := range []string{"group_by", "models", "api_key_ids", "workspace_ids"} {
		if v.Has(bare) {
			return reportQuery{}, badRequest(bare+": arrays are sent as "+bare+"[]", bare)
		}
	}
	from, err := rfc3339Param(v, "starting_at", time.Time{})
	if err != nil {
		return reportQuery{}, err
	}
	to, err := rfc3339Param(v, "ending_at", x.s.now())
	if err != nil {
		return reportQuery{}, err
	}
	q, err := bucketRange(v, from.Unix(), to.Unix())
	if err != nil {
		return q, err
	}
	q.product = productMessages
	g := v["group_by[]"]
	if q.group, err = groupBy(g, "api_key_id", "workspace_id", "model", "service_tier", "context_window", "inference_geo", "speed", "account_id", "service_account_id"); err != nil {
		return q, err
	}
	if q.group["speed"] && x.r.Header.Get("Anthropic-Beta") != "fast-mode-2026-02-01" {
		return q, badRequest("group_by speed requires the anthropic-beta header fast-mode-2026-02-01", "group_by")
	}
	q.models, q.keyIDs, q.workspaceIDs = v["models[]"], v["api_key_ids[]"], v["workspace_ids[]"]
	return q, nil
}

// rfc3339Param reads a time parameter; a zero def makes it required.
func rfc3339Param(v url.Values, name string, def time.Time) (time.Time, *apiError) {
	s := v.Get(name)
	if s == "" {
		if def.IsZero() {
			return def, badRequest(name+": Field required", name)
		}
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, badRequest(name+": invalid RFC 3339 time: "+err.Error(), name)
	}
	return t, nil
}

type anthropicUsagePage struct {
	Data     []anthropicUsageBucket `json:"data"`
	HasMore  bool                   `json:"has_more"`
	NextPage *string                `json:"next_page"`
}

type anthropicUsageBucket struct {
	StartingAt string                 `json:"starting_at"`
	EndingAt   string                 `json:"ending_at"`
	Results    []anthropicUsageResult `json:"results"`
}

type anthropicCacheCreation struct {
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
}

type anthropicServerToolUse struct {
	WebSearchRequests int64 `json:"web_search_requests"`
}

type anthropicUsageResult struct {
	UncachedInputTokens  int64                  `json:"uncached_input_tokens"`
	CacheCreation        anthropicCacheCreation `json:"cache_creation"`
	CacheReadInputTokens int64                  `json:"cache_read_input_tokens"`
	OutputTokens         int64                  `json:"output_tokens"`
	ServerToolUse        anthropicServerToolUse `json:"server_tool_use"`
	APIKeyID             *string                `json:"api_key_id"`
	WorkspaceID          *string                `json:"workspace_id"`
	Model                *string                `json:"model"`
	ServiceTier          *string                `json:"service_tier"`
	ContextWindow        *string                `json:"context_window"`
	InferenceGeo         *string                `json:"inference_geo"`
}

func anthropicPage(p *page, q reportQuery) anthropicUsagePage {
	out := anthropicUsagePage{Data: make([]anthropicUsageBucket, 0, len(p.buckets)), HasMore: p.next != 0}
	if p.next != 0 {
		c := encodeCursor(p.next)
		out.NextPage = &c
	}
	for _, b := range p.buckets {
		ab := anthropicUsageBucket{StartingAt: rfc3339(b.start), EndingAt: rfc3339(b.start + q.width), Results: []anthropicUsageResult{}}
		for _, k := range sortedGroups(b.sums) {
			ab.Results = append(ab.Results, anthropicResult(q, k, b.sums[k]))
		}
		out.Data = append(out.Data, ab)
	}
	return out
}

// anthropicResult is one group of a bucket. The fake's traffic is in the
// workspace Options.Workspaces gives its key (null: the default one), on
// the standard tier, under 200k tokens of
// context, with no geography pinned; cache writes are all 5-minute ones, as
// its answers report them.
func anthropicResult(q reportQuery, k billKey, s reported) anthropicUsageResult {
	r := anthropicUsageResult{UncachedInputTokens: s.uncached, CacheCreation: anthropicCacheCreation{Ephemeral5m: s.cacheWrite},
		CacheReadInputTokens: s.cached, OutputTokens: s.output}
	fixed := func(name, v string) *string {
		if q.group[name] {
			return &v
		}
		return nil
	}
	if q.group["model"] {
		r.Model = &k.model
	}
	if q.group["api_key_id"] {
		r.APIKeyID = nullable(k.keyID)
	}
	if q.group["workspace_id"] {
		r.WorkspaceID = nullable(k.workspace)
	}
	r.ServiceTier, r.ContextWindow, r.InferenceGeo = fixed("service_tier", "standard"), fixed("context_window", "0-200k"), fixed("inference_geo", "global")
	return r
}

func rfc3339(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }
