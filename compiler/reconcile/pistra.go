package reconcile

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Pistrad reads pistra's side from a pistrad's GET /admin/v1/usage?day=:
// the usage ledger's rows of the day, cluster-wide, in the JSON shape
// docs/reconcile.md describes.
type Pistrad struct {
	// URL is the pistrad's address, e.g. http://127.0.0.1:8080.
	URL    string
	Token  string
	Client *http.Client
}

type pistraUsage struct {
	Day  string `json:"day"`
	Rows []struct {
		Provider                 string `json:"provider"`
		Model                    string `json:"model"`
		KeyID                    string `json:"key_id"`
		WorkspaceID              string `json:"workspace_id"`
		Requests                 int64  `json:"requests"`
		EstimatedRequests        int64  `json:"estimated_requests"`
		InputTokens              int64  `json:"input_tokens"`
		CachedInputTokens        int64  `json:"cached_input_tokens"`
		CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
		OutputTokens             int64  `json:"output_tokens"`
		ReasoningTokens          int64  `json:"reasoning_tokens"`
	} `json:"rows"`
}

// Rows asks for the rows of day. A ledger's request count includes the
// requests settled at the estimate, whose tokens are in no class.
func (p *Pistrad) Rows(ctx context.Context, d time.Time) ([]PistraRow, error) {
	u := strings.TrimSuffix(p.URL, "/") + "/admin/v1/usage?day=" + d.Format(time.DateOnly)
	var got pistraUsage
	if err := getJSON(ctx, client(p.Client), u, http.Header{"Authorization": {"Bearer " + p.Token}}, &got); err != nil {
		return nil, fmt.Errorf("pistra usage: %w", err)
	}
	if got.Day != d.Format(time.DateOnly) {
		return nil, fmt.Errorf("pistra usage: asked for %s, answered %q", d.Format(time.DateOnly), got.Day)
	}
	out := make([]PistraRow, 0, len(got.Rows))
	for _, r := range got.Rows {
		out = append(out, PistraRow{Provider: r.Provider, Group: Group{Model: r.Model, KeyID: r.KeyID, WorkspaceID: r.WorkspaceID},
			Totals: Totals{Requests: r.Requests, Input: r.InputTokens, CachedInput: r.CachedInputTokens,
				CacheCreation: r.CacheCreationInputTokens, Output: r.OutputTokens},
			Reasoning: r.ReasoningTokens, Estimated: r.EstimatedRequests})
	}
	return out, nil
}
