package admin

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"
)

type fakeController struct {
	reloadErr error
	reloads   int
	status    Status
}

func (f *fakeController) Reload() error  { f.reloads++; return f.reloadErr }
func (f *fakeController) Status() Status { return f.status }

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
	}{
		{"no token", "GET", "/admin/v1/status", "", nil, 401, 0},
		{"wrong token", "POST", "/admin/v1/reload", "Bearer nope", nil, 401, 0},
		{"token without scheme", "GET", "/admin/v1/status", "s3cret", nil, 401, 0},
		{"status", "GET", "/admin/v1/status", "Bearer s3cret", nil, 200, 0},
		{"reload applied", "POST", "/admin/v1/reload", "Bearer s3cret", nil, 200, 1},
		{"reload refused", "POST", "/admin/v1/reload", "Bearer s3cret", errors.New("bad bundle"), 422, 1},
		{"reload needs POST", "GET", "/admin/v1/reload", "Bearer s3cret", nil, 405, 0},
		{"unknown route", "GET", "/admin/v1/nope", "Bearer s3cret", nil, 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &fakeController{reloadErr: tt.reloadErr, status: Status{SourceHash: "abc", Source: "test", LoadedAt: loaded}}
			h, err := Handler("s3cret", c)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || c.reloads != tt.wantReloads {
				t.Fatalf("status %d reloads %d, want %d %d: %s", rec.Code, c.reloads, tt.wantStatus, tt.wantReloads, rec.Body)
			}
			if tt.wantStatus == 200 && tt.path == "/admin/v1/status" {
				var st Status
				if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.SourceHash != "abc" || !st.LoadedAt.Equal(loaded) {
					t.Fatalf("status body %s (%v)", rec.Body, err)
				}
			}
		})
	}
}
