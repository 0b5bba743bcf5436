package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/realtime"
	"github.com/pistra/pistra/runtime/suspend"
)

// livePath is how the Live route's path starts and ends around its API
// version (see plan.LivePath).
const (
	livePrefix = "/ws/google.ai.generativelanguage."
	liveSuffix = ".GenerativeService.BidiGenerateContent"
)

// liveVersion is the API version of a Live path, ok when path is one.
func liveVersion(path string) (string, bool) {
	v, ok := strings.CutPrefix(path, livePrefix)
	if !ok {
		return "", false
	}
	v, ok = strings.CutSuffix(v, liveSuffix)
	return v, ok && v != "" && !strings.ContainsAny(v, "/.")
}

// maxSetupBytes bounds a Live session's first message, read before the
// session is routed; setupTimeout bounds the wait for it.
const (
	maxSetupBytes = 1 << 20
	setupTimeout  = 10 * time.Second
)

// session serves a WebSocket upgrade on a session route. Realtime names
// its model in the URL, so it is routed, admitted and dialled before the
// upgrade is accepted, and refused with an HTTP error; Live names it in
// its first message, so the upgrade is accepted first and a refusal is a
// 1008 close. Either way failover happens before the session is
// established, and never after.
func (s *Server) session(w http.ResponseWriter, r *http.Request, route plan.Route, version string) {
	x := s.newExchange(w, r, string(route), route.Dialect())
	defer s.recoverPanic(x)
	if e := s.checkSession(x, route); e != nil {
		s.refuse(x, e)
	} else if route == plan.RouteLive {
		s.serveLive(x, version)
	} else {
		s.serveRealtime(x)
	}
	s.end(x)
}

// checkSession runs the checks an upgrade needs before routing: the
// ledger, the method, the key as each SDK sends it, and Realtime's model.
func (s *Server) checkSession(x *exchange, route plan.Route) *dialect.Error {
	if e := s.checkLedger(); e != nil {
		return e
	}
	if r := x.r; r.Method != http.MethodGet {
		x.w.Header().Set("Allow", http.MethodGet)
		return dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"%s %s is not supported; open a WebSocket with GET", r.Method, r.URL.Path)
	}
	if route == plan.RouteLive {
		key := x.r.Header.Get("X-Goog-Api-Key")
		if key == "" {
			key = x.r.URL.Query().Get("key")
		}
		return s.authenticateKey(x, key, key != "", "x-goog-api-key: <key>")
	}
	if e := s.authenticate(x, false); e != nil {
		return e
	}
	x.rec.Model = x.r.URL.Query().Get("model")
	if x.rec.Model == "" {
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeMissingModel, "the session's model is missing; send it as ?model=")
	}
	return nil
}

// acceptOptions: compression is off on both sides (the upstream is dialled
// without it too), so no frame is ever deflated through the relay.
var acceptOptions = &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}

func (s *Server) serveRealtime(x *exchange) {
	up, t, e := s.openSession(x, plan.RouteRealtime, "")
	if e != nil {
		s.refuse(x, e)
		return
	}
	s.setServedHeaders(x)
	client, err := websocket.Accept(x.w.w, x.r, acceptOptions)
	if err != nil { // Accept answered the client
		up.CloseNow()
		t.Release()
		x.rec.Err, x.rec.Status = fmt.Errorf("accept: %w", err), http.StatusBadRequest
		return
	}
	s.relaySession(x, plan.RouteRealtime, client, up, t)
}

func (s *Server) serveLive(x *exchange, version string) {
	client, err := websocket.Accept(x.w.w, x.r, acceptOptions)
	if err != nil {
		x.rec.Err, x.rec.Status = fmt.Errorf("accept: %w", err), http.StatusBadRequest
		return
	}
	client.SetReadLimit(maxSetupBytes)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	_, msg, err := client.Read(ctx)
	cancel()
	setup, ok := realtime.ReadSetup(msg)
	if err != nil || !ok {
		x.rec.Err = err
		s.closeRefused(x, client, dialect.Errorf(http.StatusBadRequest, dialect.CodeMissingModel,
			"the session's first message must be a setup naming its model"))
		return
	}
	x.rec.Model = setup.Model
	up, t, e := s.openSession(x, plan.RouteLive, version)
	if e != nil {
		s.closeRefused(x, client, e)
		return
	}
	if err := up.Write(context.Background(), websocket.MessageText, setup.For(x.rec.Served.Model)); err != nil {
		x.rec.Err = fmt.Errorf("forward setup: %w", err)
	}
	s.relaySession(x, plan.RouteLive, client, up, t)
}

// closeRefused closes an accepted session the gateway refuses with 1008
// and the refusal's message as the reason; the record keeps the refusal's
// status, as the metrics and log count it.
func (s *Server) closeRefused(x *exchange, c *websocket.Conn, e *dialect.Error) {
	x.rec.Refused(e)
	c.Close(websocket.StatusPolicyViolation, realtime.CloseReason(e.Message))
}

// openSession routes the session and opens its upstream.
func (s *Server) openSession(x *exchange, rt plan.Route, version string) (*websocket.Conn, admission.Ticket, *dialect.Error) {
	x.caps.Reset(rt, nil)
	d, e := s.routeTo(x, rt)
	if e != nil {
		return nil, nil, e
	}
	a := realtime.Attempt{
		Request:   &admission.Request{Graph: x.snap.Graph, Programs: x.snap.Programs, Profile: x.profile, Key: x.key, Route: rt},
		Upstreams: x.snap.Upstreams, Candidates: d.Candidates, Order: d.Selection.Attempt,
		Target:    realtime.Target{Route: rt, Query: x.r.URL.Query(), LiveVersion: version},
		RequestID: x.rec.ID, Record: &x.rec,
	}
	return s.sessions.Open(x.r.Context(), &a)
}

func (s *Server) setServedHeaders(x *exchange) {
	up := &x.snap.Upstreams[x.rec.Served.Provider]
	x.rec.SetServedHeaders(x.w.Header(), up.NameHeader, up.ModelHeader(x.rec.Served.Model))
}

// relaySession runs an established session to its end and settles it on
// what the upstream reported.
func (s *Server) relaySession(x *exchange, rt plan.Route, client, up *websocket.Conn, t admission.Ticket) {
	x.rec.Status = http.StatusSwitchingProtocols
	client.SetReadLimit(-1) // the relay streams messages of any size, as the upstream's
	sess := realtime.Session{Route: rt, Client: client, Upstream: up, Ticket: t, Idle: s.opts.SessionIdle,
		Tick: budget.FlushInterval, Watch: s.sessionWatch(x),
		MeterOff: func(why string) {
			s.metrics.SessionMeterOff(string(rt), why)
			s.log.Warn("session usage decoder off; the session goes on metered by its session cost only",
				"request_id", x.rec.ID, "route", rt, "reason", why)
		}}
	res := sess.Run()
	x.rec.Usage, x.rec.UsageFrom = res.Usage, meter.SourcePassthrough // read from the frames as they passed
	t.Settle(&admission.Outcome{Status: http.StatusSwitchingProtocols, Usage: res.Usage, Model: x.rec.Served.Model})
	s.metrics.SessionEnded(string(rt), x.rec.Provider, string(res.Ending))
	if res.Err != nil {
		x.rec.Err = res.Err
	}
}

// sessionWatch is asked every flush interval whether the session's key or
// provider was suspended since it opened.
func (s *Server) sessionWatch(x *exchange) func() string {
	key, provider := x.snap.Graph.Keys[x.key].Name, x.rec.Provider
	return func() string {
		if e := s.suspensions.Key(key); e != nil {
			return e.Message
		}
		if st := s.suspensions.Store; st != nil {
			if sp, ok := st.Suspended(suspend.KindProvider, provider); ok {
				return fmt.Sprintf("provider %q is suspended: %s", provider, cmp.Or(sp.Reason, "no reason given"))
			}
		}
		return ""
	}
}
