package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/suspend"
)

type fakeController struct {
	reloadErr error
	reloads   int
	status    Status
	// preflightFor records the key each preflight acted for.
	preflightFor []string
	suspended    []suspend.Suspension
}

func (f *fakeController) Reload() (bool, error) { f.reloads++; return f.reloadErr == nil, f.reloadErr }
func (f *fakeController) Status() Status        { return f.status }

func (f *fakeController) Preflight(w http.ResponseWriter, r *http.Request, key string) error {
	if key != "dev" {
		return fmt.Errorf("%w: %q", ErrUnknownKey, key)
	}
	f.preflightFor = append(f.preflightFor, key)
	w.WriteHeader(http.StatusOK)
	return nil
}

func (f *fakeController) Catalog(now time.Time) CatalogReport {
	return CatalogReport{SourceHash: f.status.SourceHash, AsOf: now, Channels: []catalog.Row{{Provider: "p", Channel: "c"}}}
}

func (f *fakeController) Budgets() ([]budget.BucketReport, error) {
	return []budget.BucketReport{{Budget: "team-daily", Bucket: "dev", Limit: 100, Spent: 40, Held: 7}}, nil
}

// Usage has one row on 2026-12-01 and none on any other day.
func (f *fakeController) Usage(day time.Time) ([]budget.UsageDelta, error) {
	if !day.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		return nil, nil
	}
	return []budget.UsageDelta{{
		Key:    budget.UsageKey{Day: day.Unix(), Provider: "openai", Model: "gpt-4o-mini", KeyID: "key_abc"},
		Counts: budget.UsageCounts{Requests: 3, Estimated: 1, Input: 100, CachedInput: 40, Output: 20, Reasoning: 5},
	}}, nil
}

func (f *fakeController) Suspend(_ context.Context, s suspend.Suspension) error {
	if s.Name != "dev" {
		return fmt.Errorf("%w: no key %q", ErrBadRequest, s.Name)
	}
	f.suspended = append(f.suspended, s)
	return nil
}

func (f *fakeController) Unsuspend(_ context.Context, kind suspend.Kind, name string) error {
	if name != "dev" {
		return errors.New("no leader")
	}
	f.suspended = nil
	return nil
}

func (f *fakeController) ListSuspensions() ([]suspend.Suspension, error) { return f.suspended, nil }

func (f *fakeController) JoinNode(_ context.Context, id, addr string) error {
	if id == "" {
		return fmt.Errorf("%w: no id", ErrBadRequest)
	}
	return nil
}

func (f *fakeController) RemoveNode(context.Context, string) error { return errors.New("no leader") }

func TestHandlerRefusesEmptyToken(t *testing.T) {
	if _, err := Handler("", &fakeController{}); !errors.Is(err, ErrNoToken) {
		t.Fatalf("err = %v", err)
	}
}

func TestAdminRoutes(t *testing.T) {
	loaded := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, method, path, auth string
		reloadErr                error
		wantStatus, wantReloads  int
		wantPreflights           int
	}{
		{"no token", "GET", "/admin/v1/status", "", nil, 401, 0, 0},
		{"wrong token", "POST", "/admin/v1/reload", "Bearer nope", nil, 401, 0, 0},
		{"token without scheme", "GET", "/admin/v1/status", "s3cret", nil, 401, 0, 0},
		{"status", "GET", "/admin/v1/status", "Bearer s3cret", nil, 200, 0, 0},
		{"reload applied", "POST", "/admin/v1/reload", "Bearer s3cret", nil, 200, 1, 0},
		{"reload refused", "POST", "/admin/v1/reload", "Bearer s3cret", errors.New("bad bundle"), 422, 1, 0},
		{"reload needs POST", "GET", "/admin/v1/reload", "Bearer s3cret", nil, 405, 0, 0},
		{"unknown route", "GET", "/admin/v1/nope", "Bearer s3cret", nil, 404, 0, 0},
		{"preflight for a key", "POST", "/admin/v1/preflight?key=dev", "Bearer s3cret", nil, 200, 0, 1},
		{"preflight without a key", "POST", "/admin/v1/preflight", "Bearer s3cret", nil, 400, 0, 0},
		{"preflight for an unknown key", "POST", "/admin/v1/preflight?key=ghost", "Bearer s3cret", nil, 404, 0, 0},
		{"preflight needs the admin token", "POST", "/admin/v1/preflight?key=dev", "Bearer dev", nil, 401, 0, 0},
		{"catalog report", "GET", "/admin/v1/catalog/report", "Bearer s3cret", nil, 200, 0, 0},
		{"catalog report needs the admin token", "GET", "/admin/v1/catalog/report", "", nil, 401, 0, 0},
		{"budgets", "GET", "/admin/v1/budgets", "Bearer s3cret", nil, 200, 0, 0},
		{"budgets need the admin token", "GET", "/admin/v1/budgets", "", nil, 401, 0, 0},
		{"suspensions", "GET", "/admin/v1/suspensions", "Bearer s3cret", nil, 200, 0, 0},
		{"suspend", "POST", "/admin/v1/suspensions", "Bearer s3cret", nil, 200, 0, 0},
		{"suspend a name the policy lacks", "POST", "/admin/v1/suspensions?bad=name", "Bearer s3cret", nil, 400, 0, 0},
		{"unsuspend", "DELETE", "/admin/v1/suspensions/key/dev", "Bearer s3cret", nil, 200, 0, 0},
		{"unsuspend without a ledger leader", "DELETE", "/admin/v1/suspensions/key/ghost", "Bearer s3cret", nil, 503, 0, 0},
		{"join a node", "POST", "/admin/v1/ledger/members", "Bearer s3cret", nil, 200, 0, 0},
		{"remove a node without a leader", "DELETE", "/admin/v1/ledger/members/n2", "Bearer s3cret", nil, 503, 0, 0},
		{"membership needs the admin token", "POST", "/admin/v1/ledger/members", "", nil, 401, 0, 0},
		{"suspensions need the admin token", "GET", "/admin/v1/suspensions", "", nil, 401, 0, 0},
		{"heap profile", "GET", "/debug/pprof/heap?debug=1", "Bearer s3cret", nil, 200, 0, 0},
		{"profiles need the admin token", "GET", "/debug/pprof/heap", "", nil, 401, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeController{reloadErr: tt.reloadErr, status: Status{SourceHash: "abc", Source: "test", LoadedAt: loaded}}
			h, err := Handler("s3cret", c)
			if err != nil {
				t.Fatal(err)
			}
			var body io.Reader
			switch tt.path {
			case "/admin/v1/suspensions":
				body = strings.NewReader(`{"kind":"key","name":"dev","reason":"leaked"}`)
			case "/admin/v1/ledger/members":
				body = strings.NewReader(`{"id":"n4","addr":"127.0.0.4:7000"}`)
			case "/admin/v1/suspensions?bad=name":
				body = strings.NewReader(`{"kind":"key","name":"ghost"}`)
			}
			req := httptest.NewRequest(tt.method, tt.path, body)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || c.reloads != tt.wantReloads || len(c.preflightFor) != tt.wantPreflights {
				t.Fatalf("status %d reloads %d preflights %d, want %d %d %d: %s", rec.Code, c.reloads, len(c.preflightFor),
					tt.wantStatus, tt.wantReloads, tt.wantPreflights, rec.Body)
			}
			if tt.wantStatus != 200 {
				return
			}
			switch tt.path {
			case "/admin/v1/status":
				var st Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.SourceHash != "abc" || !st.LoadedAt.Equal(loaded) {
					t.Fatalf("status body %s (%v)", rec.Body, err)
				}
			case "/admin/v1/reload":
				var rb reloadBody
				if err := json.Unmarshal(rec.Body.Bytes(), &rb); err != nil || !rb.Reloaded || !rb.Changed || !strings.Contains(rec.Body.String(), `"changed":true`) {
					t.Fatalf("reload body %s (%v)", rec.Body, err)
				}
			case "/admin/v1/suspensions":
				var sb struct{ Suspensions []suspend.Suspension }
				if err := json.Unmarshal(rec.Body.Bytes(), &sb); err != nil || (tt.method == "POST" && len(sb.Suspensions) != 1) {
					t.Fatalf("suspensions body %s (%v)", rec.Body, err)
				}
			case "/admin/v1/budgets":
				var rep BudgetsReport
				if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || len(rep.Buckets) != 1 || rep.Buckets[0].Held != 7 || rep.AsOf.IsZero() {
					t.Fatalf("budgets body %s (%v)", rec.Body, err)
				}
			case "/admin/v1/catalog/report":
				var rep CatalogReport
				if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rep.SourceHash != "abc" || len(rep.Channels) != 1 || rep.AsOf.IsZero() {
					t.Fatalf("catalog body %s (%v)", rec.Body, err)
				}
			}
		})
	}
}
