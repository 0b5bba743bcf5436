package admin

import (
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// UsageReport is GET /admin/v1/usage?day=YYYY-MM-DD: the usage ledger's
// rows of one UTC day, pistra's side of a reconcile (docs/usage.md).
type UsageReport struct {
	Day  string    `json:"day"`
	AsOf time.Time `json:"as_of"`
	// RetentionDays is how long the ledger keeps a day's rows.
	RetentionDays int        `json:"retention_days"`
	Rows          []UsageRow `json:"rows"`
}

// UsageRow is one (provider, model, grouping keys) row of a day.
type UsageRow struct {
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	KeyID       string `json:"key_id"`
	WorkspaceID string `json:"workspace_id"`
	Requests    uint64 `json:"requests"`
	// EstimatedRequests are those of Requests that reported no usage:
	// settled at the estimate, their tokens in none of the classes.
	EstimatedRequests        uint64 `json:"estimated_requests"`
	InputTokens              uint64 `json:"input_tokens"`
	CachedInputTokens        uint64 `json:"cached_input_tokens"`
	CacheCreationInputTokens uint64 `json:"cache_creation_input_tokens"`
	OutputTokens             uint64 `json:"output_tokens"`
	ReasoningTokens          uint64 `json:"reasoning_tokens"`
}

const dayLayout = time.DateOnly

// usage answers the rows of ?day (default today, UTC).
func (a *api) usage(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if q := r.URL.Query().Get("day"); q != "" {
		d, err := time.Parse(dayLayout, q)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: "want ?day=YYYY-MM-DD (a UTC day): " + err.Error()})
			return
		}
		day = d
	}
	rows, err := a.c.Usage(day)
	if err != nil {
		writeError(w, err)
		return
	}
	rep := UsageReport{Day: day.Format(dayLayout), AsOf: now, RetentionDays: int(budget.UsageRetention / (24 * time.Hour)), Rows: make([]UsageRow, 0, len(rows))}
	for _, d := range rows {
		k, c := d.Key, d.Counts
		rep.Rows = append(rep.Rows, UsageRow{Provider: k.Provider, Model: k.Model, KeyID: k.KeyID, WorkspaceID: k.WorkspaceID,
			Requests: c.Requests, EstimatedRequests: c.Estimated, InputTokens: c.Input, CachedInputTokens: c.CachedInput,
			CacheCreationInputTokens: c.CacheCreation, OutputTokens: c.Output, ReasoningTokens: c.Reasoning})
	}
	writeJSON(w, http.StatusOK, rep)
}
