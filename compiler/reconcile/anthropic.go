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

// Anthropic reads Anthropic's messages usage report: daily buckets,
// grouped by model (and api_key_id, workspace_id). It reports input
// apart from cache reads and writes (uncached_input_tokens), so pistra's
// Input is their sum; it has no request count and no thinking apart from
// output.
type Anthropic struct {
	BaseURL  string // e.g. https://api.anthropic.com/v1
	AdminKey string
	Client   *http.Client
	// PageSize is the buckets asked per page (limit): 1 to 31; 0 is 31.
	PageSize int
}

// Classes: the usage report has the token classes but no request count.
func (a *Anthropic) Classes() []Class {
	return []Class{ClassInput, ClassCachedInput, ClassCacheCreation, ClassOutput}
}

type anthropicPage struct {
	Data []struct {
		StartingAt time.Time `json:"starting_at"`
		Results    []struct {
			UncachedInputTokens int64 `json:"uncached_input_tokens"`
			CacheCreation       struct {
				Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
				Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
			} `json:"cache_creation"`
			CacheReadInputTokens int64   `json:"cache_read_input_tokens"`
			OutputTokens         int64   `json:"output_tokens"`
			Model                *string `json:"model"`
			APIKeyID             *string `json:"api_key_id"`
			WorkspaceID          *string `json:"workspace_id"`
		} `json:"results"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

// Days reads [from, to) whole.
func (a *Anthropic) Days(ctx context.Context, from, to time.Time, byKey bool) (map[time.Time]*ProviderDay, error) {
	days := map[time.Time]*ProviderDay{}
	q := url.Values{"starting_at": {from.UTC().Format(time.RFC3339)}, "ending_at": {to.UTC().Format(time.RFC3339)},
		"bucket_width": {"1d"}, "limit": {strconv.Itoa(pageSize(a.PageSize))}, "group_by[]": {"model"}}
	if byKey {
		q["group_by[]"] = append(q["group_by[]"], "api_key_id", "workspace_id")
	}
	h := http.Header{"X-Api-Key": {a.AdminKey}, "Anthropic-Version": {"2023-06-01"}}
	hc := client(a.Client)
	err := pages(func(cursor string) (string, error) {
		q.Del("page")
		if cursor != "" {
			q.Set("page", cursor)
		}
		var p anthropicPage
		if err := getJSON(ctx, hc, strings.TrimSuffix(a.BaseURL, "/")+"/organizations/usage_report/messages?"+q.Encode(), h, &p); err != nil {
			return "", err
		}
		for _, b := range p.Data {
			d, err := dayOf(days, b.StartingAt.UTC())
			if err != nil {
				return "", err
			}
			for _, r := range b.Results {
				g := Group{Model: deref(r.Model), KeyID: deref(r.APIKeyID), WorkspaceID: deref(r.WorkspaceID)}
				creation := r.CacheCreation.Ephemeral5m + r.CacheCreation.Ephemeral1h
				d.Rows[g] = d.Rows[g].plus(Totals{Input: r.UncachedInputTokens + creation + r.CacheReadInputTokens,
					CachedInput: r.CacheReadInputTokens, CacheCreation: creation, Output: r.OutputTokens})
			}
		}
		return nextPage(p.HasMore, p.NextPage)
	})
	if err != nil {
		return nil, fmt.Errorf("anthropic usage report: %w", err)
	}
	return days, nil
}
