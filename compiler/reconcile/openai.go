package reconcile

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OpenAI reads OpenAI's organization usage API: completions and
// embeddings, daily buckets, grouped by model (and api_key_id). Its
// input_tokens already include cached reads and cache writes, as
// pistra's Input does; reasoning is inside output_tokens and not reported
// apart.
type OpenAI struct {
	BaseURL  string // e.g. https://api.openai.com/v1
	AdminKey string
	Client   *http.Client
	// PageSize is the buckets asked per page (limit): 1 to 31; 0 is 31.
	PageSize int
}

// Classes: the organization usage API reports every class but reasoning,
// and the request count.
func (o *OpenAI) Classes() []Class {
	return []Class{ClassInput, ClassCachedInput, ClassCacheCreation, ClassOutput, ClassRequests}
}

type openAIPage struct {
	Data []struct {
		StartTime int64 `json:"start_time"`
		EndTime   int64 `json:"end_time"`
		Results   []struct {
			InputTokens           int64   `json:"input_tokens"`
			InputCachedTokens     int64   `json:"input_cached_tokens"`
			InputCacheWriteTokens int64   `json:"input_cache_write_tokens"`
			OutputTokens          int64   `json:"output_tokens"`
			NumModelRequests      int64   `json:"num_model_requests"`
			Model                 *string `json:"model"`
			APIKeyID              *string `json:"api_key_id"`
		} `json:"results"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

// Days reads both products over [from, to) and adds them up per group:
// a model is served by one or the other.
func (o *OpenAI) Days(ctx context.Context, from, to time.Time, byKey bool) (map[time.Time]*ProviderDay, error) {
	days := map[time.Time]*ProviderDay{}
	q := url.Values{"start_time": {strconv.FormatInt(from.Unix(), 10)}, "end_time": {strconv.FormatInt(to.Unix(), 10)},
		"bucket_width": {"1d"}, "limit": {strconv.Itoa(pageSize(o.PageSize))}, "group_by[]": {"model"}}
	if byKey {
		q.Add("group_by[]", "api_key_id")
	}
	h := http.Header{"Authorization": {"Bearer " + o.AdminKey}}
	hc := client(o.Client)
	for _, product := range []string{"completions", "embeddings"} {
		err := pages(func(cursor string) (string, error) {
			q.Del("page")
			if cursor != "" {
				q.Set("page", cursor)
			}
			var p openAIPage
			if err := getJSON(ctx, hc, strings.TrimSuffix(o.BaseURL, "/")+"/organization/usage/"+product+"?"+q.Encode(), h, &p); err != nil {
				return "", err
			}
			for _, b := range p.Data {
				d, err := dayOf(days, time.Unix(b.StartTime, 0).UTC())
				if err != nil {
					return "", fmt.Errorf("openai %s: %w", product, err)
				}
				for _, r := range b.Results {
					g := Group{Model: deref(r.Model), KeyID: deref(r.APIKeyID)}
					d.Rows[g] = d.Rows[g].plus(Totals{Requests: r.NumModelRequests, Input: r.InputTokens,
						CachedInput: r.InputCachedTokens, CacheCreation: r.InputCacheWriteTokens, Output: r.OutputTokens})
				}
			}
			return nextPage(p.HasMore, p.NextPage)
		})
		if err != nil {
			return nil, fmt.Errorf("openai usage %s: %w", product, err)
		}
	}
	return days, nil
}

func pageSize(n int) int {
	if n <= 0 || n > 31 {
		return 31
	}
	return n
}

func client(c *http.Client) *http.Client {
	if c == nil {
		return &http.Client{Timeout: time.Minute}
	}
	return c
}
