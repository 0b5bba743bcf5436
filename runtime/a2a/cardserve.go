package a2a

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/proxy"
)

// maxCardBytes bounds an agent card read to be rewritten.
const maxCardBytes = 1 << 20

// card serves the agent's card with its URLs rewritten to the gateway's.
// It is read below the agent's URL, where a client given that URL looks
// for it; the other card path is tried when the agent has not the one
// asked for. A
// key must be allowed the agent to read it, and reading it is free.
func (x *exchange) card(path string) {
	if x.r.Method != http.MethodGet {
		x.w.Header().Set("Allow", http.MethodGet)
		writeError(x.w, nil, dialect.Errorf(http.StatusMethodNotAllowed, dialect.CodeMethodNotAllowed,
			"the agent card is read with GET, not %s", x.r.Method))
		return
	}
	c := Call{Method: "GetAgentCard", Class: ClassCard, Binding: Card}
	adm, no := x.p.Gate.Admit(x.r, x.agent, &c)
	if no != nil {
		writeError(x.w, nil, no)
		return
	}
	adm.Ticket.Close(x.serveCard(adm.Target, path))
}

func (x *exchange) serveCard(t *Target, path string) Outcome {
	card, status, err := x.fetchCard(t, path)
	if err == nil && status == http.StatusNotFound {
		card, status, err = x.fetchCard(t, otherCardPath(path))
	}
	if err != nil {
		return x.failed(&Call{}, err)
	}
	if status != http.StatusOK {
		e := dialect.Errorf(http.StatusBadGateway, dialect.CodeUpstreamError, "agent %q answered its card with %d", x.agent, status)
		if status == http.StatusNotFound {
			e = dialect.Errorf(http.StatusNotFound, dialect.CodeRouteNotFound, "agent %q has no card", x.agent)
		}
		writeError(x.w, nil, e)
		return Outcome{Status: e.Status, Err: e}
	}
	out, err := Rewriter{Agent: t.URL, Gateway: x.gateway}.Card(card)
	if err != nil {
		return x.broke(&Call{}, err)
	}
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	x.w.WriteHeader(http.StatusOK)
	if _, err := x.w.Write(out); err != nil {
		return Outcome{Status: StatusClientClosed, Err: fmt.Errorf("client write: %w", err)}
	}
	return Outcome{Status: http.StatusOK, Answered: true}
}

// fetchCard reads the card at path below the agent's URL.
func (x *exchange) fetchCard(t *Target, path string) ([]byte, int, error) {
	resp, err := x.send(t, http.MethodGet, upstreamURL(t.URL, path, ""), nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	buf := make([]byte, 0, 4<<10)
	if err := proxy.ReadBounded(resp.Body, &buf, maxCardBytes); err != nil {
		return nil, 0, fmt.Errorf("agent card: %w", err)
	}
	return buf, http.StatusOK, nil
}
