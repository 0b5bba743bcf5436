package fakeprovider

import (
	"encoding/json"
	"net/http"
)

// The control endpoint lets `make run` and the load benchmark, which cannot
// reach the Go API, set faults and read what the server received:
//
//	GET  /_fake/faults    the faults in force and the call count
//	POST /_fake/faults    replace the faults (a Faults JSON object)
//	GET  /_fake/usage     the Usage in force, as {"usage":"split,every-chunk"}
//	POST /_fake/usage     replace it (the same object)
//	GET  /_fake/drops     the capabilities dropped, as {"drops":"strict_tools,audio_input"}
//	POST /_fake/drops     replace them (the same object)
//	GET  /_fake/requests  the recorded calls, oldest first
//	POST /_fake/reset     forget recorded calls, zero the call count
//	GET  /_fake/chaos     the faults Chaos injected, by kind, and the call count
//	GET  /_fake/report    the usage APIs' knobs in force (a Report JSON object)
//	POST /_fake/report    replace them (the same object)
const controlPrefix = "/_fake/"

type controlState struct {
	Faults Faults `json:"faults"`
	Calls  int64  `json:"calls"`
}

type chaosJSON struct {
	Injected map[ChaosKind]int64 `json:"injected"`
	Calls    int64               `json:"calls"`
}

type usageJSON struct {
	Usage Usage `json:"usage"`
}

type dropsJSON struct {
	Drops Drops `json:"drops"`
}

type recordedJSON struct {
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Query    string      `json:"query,omitempty"`
	Header   http.Header `json:"header"`
	Body     string      `json:"body,omitempty"`
	BodySize int         `json:"body_size"`
	Model    string      `json:"model,omitempty"`
}

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	switch r.Method + " " + r.URL.Path[len(controlPrefix):] {
	case "GET faults":
		writeControlJSON(w, http.StatusOK, controlState{Faults: s.Faults(), Calls: s.Calls()})
	case "POST faults":
		var f Faults
		if decodeControl(w, r, &f, func() error { return s.SetFaults(f) }) {
			writeControlJSON(w, http.StatusOK, controlState{Faults: s.Faults(), Calls: s.Calls()})
		}
	case "GET usage":
		writeControlJSON(w, http.StatusOK, usageJSON{Usage: s.Usage()})
	case "POST usage":
		var u usageJSON
		if decodeControl(w, r, &u, func() error { s.SetUsage(u.Usage); return nil }) {
			writeControlJSON(w, http.StatusOK, usageJSON{Usage: s.Usage()})
		}
	case "GET drops":
		writeControlJSON(w, http.StatusOK, dropsJSON{Drops: s.Drops()})
	case "POST drops":
		var d dropsJSON
		if decodeControl(w, r, &d, func() error { s.SetDrops(d.Drops); return nil }) {
			writeControlJSON(w, http.StatusOK, dropsJSON{Drops: s.Drops()})
		}
	case "GET requests":
		recs := s.Requests()
		out := make([]recordedJSON, len(recs))
		for i, rec := range recs {
			out[i] = recordedJSON{Method: rec.Method, Path: rec.Path, Query: rec.RawQuery,
				Header: maskCredentials(rec.Header), Body: string(rec.Body), BodySize: rec.BodySize, Model: rec.Model}
		}
		writeControlJSON(w, http.StatusOK, out)
	case "GET report":
		writeControlJSON(w, http.StatusOK, s.Report())
	case "POST report":
		var rep Report
		if decodeControl(w, r, &rep, func() error { return s.SetReport(rep) }) {
			writeControlJSON(w, http.StatusOK, s.Report())
		}
	case "GET chaos":
		writeControlJSON(w, http.StatusOK, chaosJSON{Injected: s.ChaosInjected(), Calls: s.Calls()})
	case "POST reset":
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeControlJSON(w, http.StatusNotFound, map[string]string{"error": "unknown control endpoint " + r.Method + " " + r.URL.Path})
	}
}

// decodeControl reads a control request's JSON into v and applies it; on
// failure it answers 400 and reports false.
func decodeControl(w http.ResponseWriter, r *http.Request, v any, apply func() error) bool {
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(v)
	if err == nil {
		err = apply()
	}
	if err != nil {
		writeControlJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return false
	}
	return true
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// maskCredentials hides all but the last four characters of credential
// headers (all of short ones), as provider dashboards do: enough to tell keys apart over HTTP
// without handing them out. The Go API keeps them whole for tests.
func maskCredentials(h http.Header) http.Header {
	out := h.Clone()
	for _, name := range []string{"Authorization", "X-Api-Key"} {
		for i, v := range out[name] {
			out[name][i] = "…"
			if len(v) > 12 {
				out[name][i] += v[len(v)-4:]
			}
		}
	}
	return out
}
