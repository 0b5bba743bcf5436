package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/metrics"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/route"
)

// inference serves one POST on an inference route: refuse early and in the
// caller's dialect whatever is wrong with the request, then hand the
// selected candidates to the attempt loop.
func (s *Server) inference(w http.ResponseWriter, r *http.Request, route plan.Route) {
	x := s.newExchange(w, r, string(route), route.Dialect())
	x.inference, x.trace = true, s.tracer.Start(r, x.rec.Start)
	defer s.recoverPanic(x)
	if e := s.checkRequest(x, route); e != nil {
		s.refuse(x, e)
	} else {
		s.forward(x, route)
	}
	s.end(x)
}

// end records x and gives it back, then cuts the connection when the
// record says so (an upstream that broke after the status went out, a
// client that left first).
func (s *Server) end(x *exchange) {
	s.finish(x)
	cut := x.rec.Cut
	s.release(x)
	if cut {
		cutConnection()
	}
}

// checkRequest runs every check that needs no upstream, in the order a
// client would fix them: method, key, headers, body, model.
func (s *Server) checkRequest(x *exchange, route plan.Route) *dialect.Error {
	if e := s.checkLedger(); e != nil {
		return e
	}
	if r := x.r; r.Method != http.MethodPost {
		x.w.Header().Set("Allow", http.MethodPost)
		return dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"%s %s is not supported; use POST", r.Method, r.URL.Path)
	}
	if e := s.authenticate(x, route == plan.RouteMessages); e != nil {
		return e
	}
	return s.readRequest(x, route)
}

// readRequest checks the headers the route needs, reads the body with its
// bound and finds the model. The capability reader is armed on the body but
// reads nothing until selection asks.
func (s *Server) readRequest(x *exchange, route plan.Route) *dialect.Error {
	r := x.r
	if route == plan.RouteMessages {
		if e := checkAnthropicVersion(r); e != nil {
			return e
		}
	}
	if e := checkContentType(r); e != nil {
		return e
	}
	raw := proxy.GetBuffer()
	if e := s.readBodyWithin(x, r, raw); e != nil {
		proxy.PutBuffer(raw)
		return e
	}
	if !json.Valid(*raw) {
		proxy.PutBuffer(raw)
		return dialect.Errorf(http.StatusBadRequest, dialect.CodeInvalidJSON, "the request body is not valid JSON")
	}
	h, err := dialect.ReadHead(*raw)
	x.body.Reset(raw, h.Model) // the body owns raw from here, even on error
	if err != nil {
		return modelFieldError(err)
	}
	x.body.SetStream(h.Stream)
	x.maxOutput = h.MaxOutput
	x.rec.Model = h.Model.Name
	x.caps.Reset(route, x.body.Bytes())
	return nil
}

// routeTo decides and counts what selection passed over and the rules it
// lifted; a refusal that routing reached names the claims it acted on.
// The decision is kept on x, out of the frames that stay on the stack
// while the answer is relayed.
func (s *Server) routeTo(x *exchange, rt plan.Route) (*route.Decision, *dialect.Error) {
	g := x.snap.Graph
	var e *dialect.Error
	x.decision, e = s.decide(x, rt)
	d := &x.decision
	s.countSelection(g, d)
	if x.trace != nil {
		s.traceDecision(x, d)
	}
	if len(d.Lifted) > 0 {
		s.rules.Lifted(g, x.profile, d.Lifted, x.rec.Start)
	}
	if e != nil && d.Selection.Rejected {
		x.rec.Origin = d.Origins()
	}
	return d, e
}

func modelFieldError(err error) *dialect.Error {
	e := &dialect.Error{Status: http.StatusBadRequest, Message: err.Error(), Param: "model"}
	switch {
	case errors.Is(err, dialect.ErrNotObject):
		e.Code, e.Param = dialect.CodeInvalidJSON, ""
	case errors.Is(err, dialect.ErrNoModel):
		e.Code = dialect.CodeMissingModel
	default:
		e.Code = dialect.CodeInvalidModel
	}
	return e
}

// forward decides, counts what selection passed over, and runs the attempt
// loop on the selected candidates.
func (s *Server) forward(x *exchange, route plan.Route) {
	g := x.snap.Graph
	d, e := s.routeTo(x, route)
	if e != nil {
		s.refuse(x, e)
		return
	}
	// Set in place, field by field: a literal assigned through a pointer
	// is built on the stack first, and that kilobyte under the relay's
	// frames doubles a stream's goroutine stack to 16 KiB.
	px := &x.px
	*px = proxy.Exchange{}
	px.W, px.Client, px.RequestID = &x.w, x.r, x.rec.ID
	px.Route, px.Dialect, px.Body = route, x.dialect, &x.body
	px.Upstreams = x.snap.Upstreams
	px.Candidates, px.Order, px.Skips = d.Candidates, d.Selection.Attempt, d.Skips
	ad := &px.Admission
	ad.Graph, ad.Programs, ad.Profile, ad.Key = x.snap.Graph, x.snap.Programs, x.profile, x.key
	ad.Route, ad.Body, ad.MaxOutput = route, x.body.Bytes(), x.maxOutput
	px.Record, px.Trace = &x.rec, x.trace
	s.proxy.Serve(&x.px)
	if c := x.rec.Served; c != nil && d.Selection.Lossy {
		x.rec.Lost = d.Used &^ c.Preserves
		s.countLosses(g, c, x.rec.Lost, metrics.DowngradeAllowed)
	}
}
