// Package admin serves pistrad's operator API on its own listener. Every
// route requires Authorization: Bearer with the admin token.
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/circuit"
	"github.com/pistra/pistra/runtime/pool"
	"github.com/pistra/pistra/runtime/suspend"
)

// Controller is what the admin API drives: the snapshot holder.
type Controller interface {
	// Reload loads and validates a new bundle and swaps it in, or leaves
	// the current one serving and returns why it refused. changed is
	// whether the new bundle differs from the one it replaced (its source
	// hash or digest), so an operator can tell a no-op reload from an edit.
	Reload() (changed bool, err error)
	// Status describes the active snapshot.
	Status() Status
	// Preflight answers the public preflight for the request in r as the
	// key named key would get it. When no key has that name it writes
	// nothing and returns an error wrapping ErrUnknownKey.
	Preflight(w http.ResponseWriter, r *http.Request, key string) error
	// Catalog lists the serving snapshot's routable channels, each claim's
	// age counted up to now.
	Catalog(now time.Time) CatalogReport
	// Budgets lists every open budget bucket with its exact figures:
	// those this node holds and those the ledger holds.
	Budgets() ([]budget.BucketReport, error)
	// Usage lists the usage ledger's rows of the UTC day starting at day.
	Usage(day time.Time) ([]budget.UsageDelta, error)
	// Suspend, Unsuspend and ListSuspensions manage suspensions; a kind or
	// name the policy does not declare is an error wrapping ErrBadRequest.
	Suspend(ctx context.Context, s suspend.Suspension) error
	Unsuspend(ctx context.Context, kind suspend.Kind, name string) error
	ListSuspensions() ([]suspend.Suspension, error)
	// JoinNode and RemoveNode change the ledger cluster's membership.
	JoinNode(ctx context.Context, id, addr string) error
	RemoveNode(ctx context.Context, id string) error
}

// ErrBadRequest is wrapped by a Controller's errors that are the caller's
// to fix (answered 400); other errors are the ledger's (answered 503).
var ErrBadRequest = errors.New("bad request")

// BudgetsReport is GET /admin/v1/budgets: every bucket of an open window
// the ledger holds, whichever node served it, and every bucket this node
// has open, those of a budget a reload removed included while they drain.
type BudgetsReport struct {
	AsOf    time.Time             `json:"as_of"`
	Buckets []budget.BucketReport `json:"buckets"`
}

// ErrUnknownKey is wrapped by Controller.Preflight for a key name the
// serving policy does not declare.
var ErrUnknownKey = errors.New("no key has that name")

// CatalogReport is every routable channel of the serving snapshot with the
// provenance of its capability claim: the rows `pistrac catalog` prints
// offline, computed against what is actually serving.
type CatalogReport struct {
	SourceHash string        `json:"source_hash"`
	AsOf       time.Time     `json:"as_of"`
	Channels   []catalog.Row `json:"channels"`
}

// Status describes the active snapshot and the last reload.
type Status struct {
	SourceHash string    `json:"source_hash"`
	Source     string    `json:"source"`
	LoadedAt   time.Time `json:"loaded_at"`
	// LastReloadError is the reason the most recent reload was refused;
	// empty when it succeeded or none was tried.
	LastReloadError string `json:"last_reload_error,omitempty"`
	// LastFlush is when budget spend last reached the ledger.
	LastFlush time.Time `json:"last_flush"`
	// Ledger is the durable ledger's state (raft role, leader, peers);
	// absent when budgets are kept in this process's memory. An empty
	// leader means the ledger is degraded.
	Ledger *LedgerStatus `json:"ledger,omitempty"`
	// Circuits is the state of every provider's circuit breaker, for the
	// providers whose policy names one.
	Circuits []circuit.Status `json:"circuits,omitempty"`
	// Pools is every pooled provider's member sets (the pool's and each
	// subset's), how long ago each resolved, and its picker.
	Pools []pool.Status `json:"pools,omitempty"`
	// Bundle identifies the build that serves.
	Bundle BundleStatus `json:"bundle"`
	// SuspendedRules are the access rules suspended now, each with the
	// rules of the serving policy it stands for and how many of this
	// node's decisions served a candidate it denies.
	SuspendedRules []suspend.RuleStatus `json:"suspended_rules,omitempty"`
}

// LedgerStatus is one node's view of the durable ledger; the ledger
// fills it in.
type LedgerStatus struct {
	ID    string `json:"id"`
	State string `json:"state"` // Leader, Follower, Candidate or Shutdown
	// Leader is the leader's ID; empty when none is known, and then the
	// node is degraded: it serves its last known totals and keeps its
	// spend unflushed.
	Leader       string         `json:"leader,omitempty"`
	Ready        bool           `json:"ready"`
	AppliedIndex uint64         `json:"applied_index"`
	Servers      []LedgerMember `json:"servers,omitempty"`
	// Term is the raft term the node is in (it rises with each election),
	// CommitIndex the highest index it knows committed, LastContactMS how
	// long ago a follower last heard from its leader (0 on the leader, and
	// before any contact).
	Term          uint64 `json:"term"`
	CommitIndex   uint64 `json:"commit_index"`
	LastContactMS int64  `json:"last_contact_ms"`
}

// LedgerMember is one member of the ledger cluster's configuration.
type LedgerMember struct {
	ID    string `json:"id"`
	Addr  string `json:"addr"`
	Voter bool   `json:"voter"`
}

// BundleStatus is how an operator proves that the routing serving is the
// routing that was built and reviewed.
type BundleStatus struct {
	// Digest is the serving graph's content digest, checked at load.
	Digest string `json:"digest"`
	// SignedBy is the key id of the graph's signature, or "unsigned".
	SignedBy string `json:"signed_by"`
	// SignatureVerified is true when pistrad checked that signature with
	// its -bundle-public-key; without one, SignedBy is only what the
	// signature claims.
	SignatureVerified bool `json:"signature_verified"`
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
	mux.HandleFunc("POST /admin/v1/preflight", a.preflight)
	mux.HandleFunc("GET /admin/v1/catalog/report", a.catalog)
	mux.HandleFunc("GET /admin/v1/budgets", a.budgets)
	mux.HandleFunc("GET /admin/v1/usage", a.usage)
	mux.HandleFunc("GET /admin/v1/suspensions", a.listSuspensions)
	mux.HandleFunc("POST /admin/v1/suspensions", a.suspend)
	mux.HandleFunc("DELETE /admin/v1/suspensions/{kind}/{name}", a.unsuspend)
	// Replacing a node: remove the dead one, then start the new one with
	// -join, or add it here.
	mux.HandleFunc("POST /admin/v1/ledger/members", a.join)
	mux.HandleFunc("DELETE /admin/v1/ledger/members/{id}", a.remove)
	// Profiles of the running gateway, behind the same token: CPU and heap
	// are how a latency or overhead question gets answered in production.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
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
	Changed  bool   `json:"changed"`
	Status   Status `json:"status"`
	Error    string `json:"error,omitempty"`
}

// reload answers 200 with the new status, or 422 with the refusal and the
// status of the snapshot that keeps serving.
func (a *api) reload(w http.ResponseWriter, _ *http.Request) {
	changed, err := a.c.Reload()
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, reloadBody{Status: a.c.Status(), Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, reloadBody{Reloaded: true, Changed: changed, Status: a.c.Status()})
}

func (a *api) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.c.Status())
}

// preflight answers POST /admin/v1/preflight?key=<name>[&route=<route>]
// with the body the key's holder would send: the answer, or the refusal,
// that holder would get from POST /v1/preflight.
func (a *api) preflight(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "name the key to act for: POST /admin/v1/preflight?key=<name>"})
		return
	}
	if err := a.c.Preflight(w, r, key); err != nil {
		writeJSON(w, http.StatusNotFound, errorBody{Error: err.Error()})
	}
}

func (a *api) catalog(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.c.Catalog(time.Now()))
}

func (a *api) budgets(w http.ResponseWriter, _ *http.Request) {
	list, err := a.c.Budgets()
	if err != nil {
		writeError(w, err)
		return
	}
	if list == nil {
		list = []budget.BucketReport{}
	}
	writeJSON(w, http.StatusOK, BudgetsReport{AsOf: time.Now().UTC(), Buckets: list})
}

type suspensionsBody struct {
	Suspensions []suspend.Suspension `json:"suspensions"`
}

func (a *api) listSuspensions(w http.ResponseWriter, _ *http.Request) {
	list, err := a.c.ListSuspensions()
	if err != nil {
		writeError(w, err)
		return
	}
	if list == nil {
		list = []suspend.Suspension{}
	}
	writeJSON(w, http.StatusOK, suspensionsBody{Suspensions: list})
}

// suspend takes {"kind": "key"|"provider"|"rule"|"mcp_server"|"agent", "name": ..., "reason": ...}.
func (a *api) suspend(w http.ResponseWriter, r *http.Request) {
	var s suspend.Suspension
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "want {\"kind\": \"key\"|\"provider\"|\"rule\"|\"mcp_server\"|\"agent\", \"name\": ..., \"reason\": ...}: " + err.Error()})
		return
	}
	if err := a.c.Suspend(r.Context(), s); err != nil {
		writeError(w, err)
		return
	}
	a.listSuspensions(w, r)
}

func (a *api) unsuspend(w http.ResponseWriter, r *http.Request) {
	if err := a.c.Unsuspend(r.Context(), suspend.Kind(r.PathValue("kind")), r.PathValue("name")); err != nil {
		writeError(w, err)
		return
	}
	a.listSuspensions(w, r)
}

// join takes {"id": ..., "addr": "host:port"}.
func (a *api) join(w http.ResponseWriter, r *http.Request) {
	var m struct{ ID, Addr string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&m); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: `want {"id": ..., "addr": "host:port"}: ` + err.Error()})
		return
	}
	if err := a.c.JoinNode(r.Context(), m.ID, m.Addr); err != nil {
		writeError(w, err)
		return
	}
	a.status(w, r)
}

func (a *api) remove(w http.ResponseWriter, r *http.Request) {
	if err := a.c.RemoveNode(r.Context(), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	a.status(w, r)
}

// writeError answers a Controller error: 400 when it is the caller's to
// fix, 503 when the ledger could not do it.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	if errors.Is(err, ErrBadRequest) {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v) // plain structs of strings, times and capability sets: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
