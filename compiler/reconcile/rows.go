// Package reconcile holds pistra's usage ledger against a provider's own
// admin usage API: per UTC day, provider, model and token class, pistra's
// figure beside the provider's, the difference and a verdict, with what
// the data says about why they differ (docs/reconcile.md).
package reconcile

import (
	"context"
	"time"
)

// Class is a token class, or the request count, as compared.
type Class string

const (
	ClassInput         Class = "input"
	ClassCachedInput   Class = "cached_input"
	ClassCacheCreation Class = "cache_creation"
	ClassOutput        Class = "output"
	ClassRequests      Class = "requests"
)

// Totals are one side's figures of a row in pistra's convention: Input
// counts every input token, cached reads and cache writes included;
// Output every output token, reasoning included. Each provider's figures
// are converted into it before they are compared (see the sources).
type Totals struct {
	Requests, Input, CachedInput, CacheCreation, Output int64
}

func (t Totals) get(c Class) int64 {
	switch c {
	case ClassInput:
		return t.Input
	case ClassCachedInput:
		return t.CachedInput
	case ClassCacheCreation:
		return t.CacheCreation
	case ClassOutput:
		return t.Output
	}
	return t.Requests
}

func (t Totals) plus(o Totals) Totals {
	return Totals{Requests: t.Requests + o.Requests, Input: t.Input + o.Input, CachedInput: t.CachedInput + o.CachedInput,
		CacheCreation: t.CacheCreation + o.CacheCreation, Output: t.Output + o.Output}
}

// Group is what a row is grouped by within a day and provider: the model
// as served and the provider-side key and workspace ids (empty when
// unknown or not grouped by).
type Group struct {
	Model       string `json:"model"`
	KeyID       string `json:"key_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
}

// PistraRow is one row of pistra's usage ledger.
type PistraRow struct {
	Provider string
	Group
	Totals
	// Reasoning is inside Output; no usage API reports it apart.
	Reasoning int64
	// Estimated counts the requests settled at the estimate: they
	// reported no usage, so their tokens are in no class.
	Estimated int64
}

// PistraSource is pistra's side: the usage ledger's rows of a UTC day.
type PistraSource interface {
	Rows(ctx context.Context, day time.Time) ([]PistraRow, error)
}

// ProviderDay is what a usage API answered for one UTC day. Reported is
// false when the API returned no bucket for it: it has not got there yet.
type ProviderDay struct {
	Reported bool
	Rows     map[Group]Totals
}

// UsageSource is a provider's side: its usage API, read for whole UTC days.
type UsageSource interface {
	// Classes are those its figures can be compared in.
	Classes() []Class
	// Days reads [from, to) grouped by model, and by key and workspace
	// when byKey, every page of it; the map is keyed by the day's midnight.
	Days(ctx context.Context, from, to time.Time, byKey bool) (map[time.Time]*ProviderDay, error)
}
