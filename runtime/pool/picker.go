package pool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pistra/pistra/runtime/plan"
)

// Dial opens the client of pool p's endpoint picker (p.Picker), with the
// transport security p declares. The client is shared by all the pool's
// requests and closed when a reload drops or changes the pool.
type Dial func(p *plan.Pool) (Picker, error)

// Picker is a client of an endpoint picker (an ext_proc server).
type Picker interface {
	// Pick asks for the endpoints of one request, in one exchange that
	// stays open for the response's report (Answer.Stream). An error
	// wrapping an *Immediate is the picker answering in place of a pick;
	// any other error is the picker failing (down, too slow, broken).
	Pick(ctx context.Context, q Query) (*Answer, error)
	Close() error
}

// Query is what the picker is asked.
type Query struct {
	// Header is the request's headers, credentials removed.
	Header http.Header
	// Body is the body as it would be sent upstream.
	Body []byte
	// Subset, when not nil, is the member set (host:port) the picker must
	// choose from: the profile's subset of the pool. Read only.
	Subset []string
	// Timeout bounds the pick.
	Timeout time.Duration
}

// Answer is the picker's pick.
type Answer struct {
	// Endpoints are the endpoints it named (host:port), in its order of
	// preference.
	Endpoints []string
	// Model is the model the picker's replacement body names when it
	// differs from the request's; empty when it did not change it.
	Model string
	// Stream is the rest of the exchange; nil when there is none.
	Stream Stream
}

// Stream is what follows a pick, so the picker's view of each endpoint's
// load follows the request.
type Stream interface {
	// Served tells it which endpoint answered, with what status, at the
	// response's headers.
	Served(endpoint string, status int)
	// Done ends the exchange: the request is over. Once.
	Done()
}

// Immediate is a picker answering in place of a pick (an ext_proc
// immediate response): 429 sheds the request, 503 says no endpoint is
// ready; any other status is read as the picker failing.
type Immediate struct {
	Status int
	Body   string
}

func (e *Immediate) Error() string {
	return fmt.Sprintf("picker answered %d instead of picking: %s", e.Status, e.Body)
}

// immediateStatus is the status of the picker's immediate answer in err,
// 0 when err is not one.
func immediateStatus(err error) int {
	if im, ok := errors.AsType[*Immediate](err); ok {
		return im.Status
	}
	return 0
}

// picker is one pool's picker client, or why there is none.
type picker struct {
	decl   plan.Pool // what it was dialled for
	client Picker
	err    error
}

func (p *picker) close() {
	if p.client != nil {
		_ = p.client.Close()
	}
}

// pickerFor is pool p's picker client: the one dialled for the same
// declaration, else a new one. s.mu is held.
func (s *Set) pickerFor(p *plan.Pool) *picker {
	if old := s.pickers[p.Name]; old != nil && samePool(&old.decl, p) {
		return old
	}
	pk := &picker{decl: *p}
	switch {
	case s.opts.Picker == nil:
		pk.err = errors.New("this gateway has no picker client")
	default:
		if pk.client, pk.err = s.opts.Picker(p); pk.err != nil {
			pk.err = fmt.Errorf("dial picker %s: %w", p.Picker, pk.err)
		}
	}
	if pk.err != nil {
		s.log.Error("pool picker unusable: its pool fails open or closed as it says", "pool", p.Name, "picker", p.Picker, "error", pk.err)
	}
	if old := s.pickers[p.Name]; old != nil {
		s.retired = append(s.retired, old)
	}
	s.pickers[p.Name] = pk
	return pk
}

// retireDropped retires the clients of pools g no longer has, or whose
// picker it removed. s.mu is held.
func (s *Set) retireDropped(g *plan.Graph) {
	for name, pk := range s.pickers {
		if !hasPicker(g, name) {
			delete(s.pickers, name)
			s.retired = append(s.retired, pk)
		}
	}
}

func hasPicker(g *plan.Graph, pool string) bool {
	for i := range g.Pools {
		if g.Pools[i].Name == pool {
			return g.Pools[i].Picker != ""
		}
	}
	return false
}
