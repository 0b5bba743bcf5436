package server

import (
	"net/http"
	"slices"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/route"
)

// routeModels is the metrics and log route label of GET /v1/models.
const routeModels = "models"

// dialectOf picks the dialect of a request on a path both dialects share:
// anthropic-version is the one signal every Anthropic SDK sends.
func dialectOf(r *http.Request) plan.Dialect {
	if r.Header.Get("Anthropic-Version") != "" {
		return plan.DialectAnthropic
	}
	return plan.DialectOpenAI
}

// models answers GET /v1/models (id == "") and GET /v1/models/{id} with
// what the caller's profile may use in the caller's dialect, aliases
// included.
func (s *Server) models(w http.ResponseWriter, r *http.Request, id string) {
	d := dialectOf(r)
	x := s.newExchange(w, r, routeModels, d)
	defer s.recoverPanic(x)
	x.rec.Model = id
	if e := s.listModels(x, d, id); e != nil {
		s.refuse(x, e)
	}
	s.finish(x)
	s.release(x)
}

func (s *Server) listModels(x *exchange, d plan.Dialect, id string) *dialect.Error {
	// HEAD answers as GET does, without the body (net/http drops it).
	if x.r.Method != http.MethodGet && x.r.Method != http.MethodHead {
		x.w.Header().Set("Allow", "GET, HEAD")
		return dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"%s %s is not supported; use GET", x.r.Method, x.r.URL.Path)
	}
	if e := s.authenticate(x, true); e != nil {
		return e
	}
	names := x.snap.Models(x.profile, d)
	if id == "" {
		x.dialect.WriteModelList(&x.w, names, x.r.URL.Query())
		x.rec.Status = http.StatusOK
		return nil
	}
	if _, found := slices.BinarySearch(names, id); !found {
		return route.NotListed(id, names)
	}
	x.dialect.WriteModel(&x.w, id)
	x.rec.Status = http.StatusOK
	return nil
}
