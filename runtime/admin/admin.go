// Package admin serves pistrad's operator API on its own listener. Every
// route requires Authorization: Bearer with the admin token.
package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Controller is what the admin API drives: the snapshot holder.
type Controller interface {
	// Reload loads and validates a new bundle and swaps it in, or leaves
	// the current one serving and returns why it refused.
	Reload() error
	// Status describes the active snapshot.
	Status() Status
}

// Status describes the active snapshot and the last reload.
type Status struct {
	SourceHash string    `json:"source_hash"`
	Source     string    `json:"source"`
	LoadedAt   time.Time `json:"loaded_at"`
	// LastReloadError is the reason the most recent reload was refused;
	// empty when it succeeded or none was tried.
	LastReloadError string `json:"last_reload_error,omitempty"`
}

// ErrNoToken is returned by Handler when no admin token is configured: an
// admin API without authentication is never started.
var ErrNoToken = errors.New("admin token is empty: set PISTRA_ADMIN_TOKEN")

// Handler returns the admin API, authenticated with token.
func Handler(token string, c Controller) (http.Handler, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	a := &api{want: sha256.Sum256([]byte(token)), c: c}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/v1/reload", a.reload)
	mux.HandleFunc("GET /admin/v1/status", a.status)
	return a.authenticate(mux), nil
}

type api struct {
	// want is the token's digest: comparing fixed-length digests in
	// constant time reveals neither the token nor its length.
	want [sha256.Size]byte
	c    Controller
}

func (a *api) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		got := sha256.Sum256([]byte(token))
		if !ok || subtle.ConstantTimeCompare(got[:], a.want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pistra-admin"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "invalid or missing admin token"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

type errorBody struct {
	Error string `json:"error"`
}

type reloadBody struct {
	Reloaded bool   `json:"reloaded"`
	Status   Status `json:"status"`
	Error    string `json:"error,omitempty"`
}

// reload answers 200 with the new status, or 422 with the refusal and the
// status of the snapshot that keeps serving.
func (a *api) reload(w http.ResponseWriter, _ *http.Request) {
	if err := a.c.Reload(); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, reloadBody{Status: a.c.Status(), Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, reloadBody{Reloaded: true, Status: a.c.Status()})
}

func (a *api) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.c.Status())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // plain structs of strings and times: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
