package fakeprovider

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DialectGemini serves Gemini Live sessions only.
const DialectGemini Dialect = "gemini"

// SessionKnobs bend the WebSocket sessions the fake serves (OpenAI
// Realtime on an openai server, Gemini Live on a gemini one).
type SessionKnobs struct {
	// Desync makes the first usage event of each session longer than a
	// passive decoder assembles (a padded response.done, a padded Live
	// usage message): valid JSON every client reads, which the gateway's
	// decoder cannot follow.
	Desync bool
	// AbruptAfter drops the connection without a close frame after this
	// many responses (0: never).
	AbruptAfter int
	// FrameDelay paces every message the fake sends.
	FrameDelay time.Duration
	// LiveRunning makes Live restate a turn's usage as it goes: a running
	// usageMetadata before the turn's final one.
	LiveRunning bool
}

// desyncPad is how long a desynced usage event is padded: past the
// gateway decoder's 1 MiB bound.
const desyncPad = 1<<20 + 1024

// SessionEnd is how one session the fake served ended, as the fake saw it.
type SessionEnd struct {
	Model  string
	Code   websocket.StatusCode // -1 when the connection was lost without a close
	Reason string
}

// SessionUsage is the usage the fake reported over every session, summed
// per token class.
type SessionUsage struct {
	Input, Output, Cached, Total uint64
}

// sessions is the fake's record of its sessions.
type sessions struct {
	mu    sync.Mutex
	knobs SessionKnobs
	ends  []SessionEnd
	usage SessionUsage
	opens int
}

// SetSessionKnobs changes how sessions opened from now on behave.
func (s *Server) SetSessionKnobs(k SessionKnobs) {
	s.sess.mu.Lock()
	s.sess.knobs = k
	s.sess.mu.Unlock()
}

// SessionEnds lists how the sessions that ended so far ended, in order.
func (s *Server) SessionEnds() []SessionEnd {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return append([]SessionEnd(nil), s.sess.ends...)
}

// SessionsOpened counts the sessions the fake accepted.
func (s *Server) SessionsOpened() int {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return s.sess.opens
}

// SessionUsage is what the fake reported in its sessions so far.
func (s *Server) SessionUsage() SessionUsage {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	return s.sess.usage
}

func (s *Server) reported(u SessionUsage) {
	s.sess.mu.Lock()
	s.sess.usage.Input += u.Input
	s.sess.usage.Output += u.Output
	s.sess.usage.Cached += u.Cached
	s.sess.usage.Total += u.Total
	s.sess.mu.Unlock()
}

// serveSession serves a WebSocket upgrade on a session path, reporting
// whether r was one.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) bool {
	live := strings.HasPrefix(r.URL.Path, "/ws/google.ai.generativelanguage.") && strings.HasSuffix(r.URL.Path, ".BidiGenerateContent")
	if !(s.dialect == DialectOpenAI && r.URL.Path == "/v1/realtime") && !(s.dialect == DialectGemini && live) {
		return false
	}
	key, model := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.URL.Query().Get("model")
	if live {
		key = r.Header.Get("X-Goog-Api-Key")
	}
	if key == "" || !s.keyMatches(key) {
		http.Error(w, `{"error":{"message":"invalid API key"}}`, http.StatusUnauthorized)
		return true
	}
	if !live && model == "" {
		http.Error(w, `{"error":{"message":"model is required"}}`, http.StatusBadRequest)
		return true
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return true
	}
	c.SetReadLimit(-1)
	s.sess.mu.Lock()
	s.sess.opens++
	k := s.sess.knobs
	s.sess.mu.Unlock()
	fs := &fakeSession{s: s, c: c, knobs: k, model: model}
	if live {
		err = fs.live()
	} else {
		err = fs.realtime()
	}
	s.ended(fs.model, err)
	return true
}

// ended records how a session ended: the client's close, or -1.
func (s *Server) ended(model string, err error) {
	e := SessionEnd{Model: model, Code: -1}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		e.Code, e.Reason = ce.Code, ce.Reason
	}
	s.sess.mu.Lock()
	s.sess.ends = append(s.sess.ends, e)
	s.sess.mu.Unlock()
}

// fakeSession is one session being served.
type fakeSession struct {
	s         *Server
	c         *websocket.Conn
	knobs     SessionKnobs
	model     string
	responses int
	desynced  bool
}

// send writes one text message after the knobs' delay.
func (f *fakeSession) send(msg []byte) error {
	if f.knobs.FrameDelay > 0 {
		time.Sleep(f.knobs.FrameDelay)
	}
	return f.c.Write(context.Background(), websocket.MessageText, msg)
}

// pad is what a desynced usage event carries, once per session.
func (f *fakeSession) pad() string {
	if !f.knobs.Desync || f.desynced {
		return ""
	}
	f.desynced = true
	return strings.Repeat("x", desyncPad)
}

// afterResponse drops the connection when the knobs say so: errAbrupt.
func (f *fakeSession) afterResponse() error {
	f.responses++
	if f.knobs.AbruptAfter > 0 && f.responses >= f.knobs.AbruptAfter {
		f.c.CloseNow()
		return errAbrupt
	}
	return nil
}

var errAbrupt = errors.New("fakeprovider: session dropped")
