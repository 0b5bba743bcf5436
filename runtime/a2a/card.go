package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Card paths, below the agent's URL: the current well-known name and the
// one older clients ask for. Both are served, from whichever the agent
// has.
const (
	CardPath    = "/.well-known/agent-card.json"
	OldCardPath = "/.well-known/agent.json"
)

// isCardPath reports whether a path below the agent's URL asks for its
// card.
func isCardPath(p string) bool { return p == CardPath || p == OldCardPath }

// otherCardPath is the card path to try when the agent has not the one
// asked for.
func otherCardPath(p string) string {
	if p == CardPath {
		return OldCardPath
	}
	return CardPath
}

// Rewriter rewrites the URLs of an agent's card to the gateway's, so a
// client that discovers the agent through its card keeps calling it
// through the gateway. The gateway serves at Gateway what the agent
// serves at its URL (Agent) and below, so:
//
//   - the agent's URL becomes Gateway, and a URL below it Gateway
//     followed by the rest of its path;
//   - the card's main url elsewhere becomes Gateway (the gateway sends
//     JSON-RPC to the agent's declared URL whatever the card says), and
//     an additional interface elsewhere is dropped: the gateway cannot
//     reach it on the client's behalf, and a client must not be pointed
//     around it.
//
// A rewritten card's signatures no longer verify; they are dropped rather
// than left to fail a client's check. Both card generations are read:
// v0.3's url and additionalInterfaces, v1.0's supportedInterfaces. Every
// other member is kept as the agent wrote it.
type Rewriter struct {
	Agent   *url.URL
	Gateway string
}

// Card rewrites a card document.
func (rw Rewriter) Card(card []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(card, &doc); err != nil {
		return nil, fmt.Errorf("agent card: %w", err)
	}
	if doc == nil {
		return nil, fmt.Errorf("agent card: not an object")
	}
	delete(doc, "signatures")
	if raw, ok := doc["url"]; ok {
		var u string
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, fmt.Errorf("agent card: url: %w", err)
		}
		mapped, ok := rw.url(u)
		if !ok {
			mapped = rw.Gateway
		}
		doc["url"] = quote(mapped)
	}
	for _, name := range [...]string{"additionalInterfaces", "supportedInterfaces"} {
		raw, ok := doc[name]
		if !ok {
			continue
		}
		kept, err := rw.interfaces(raw)
		if err != nil {
			return nil, fmt.Errorf("agent card: %s: %w", name, err)
		}
		doc[name] = kept
	}
	return json.Marshal(doc)
}

// interfaces rewrites a list of interfaces, dropping those the gateway
// cannot stand in front of.
func (rw Rewriter) interfaces(raw json.RawMessage) (json.RawMessage, error) {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	kept := list[:0]
	for _, in := range list {
		var u string
		if err := json.Unmarshal(in["url"], &u); err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		mapped, ok := rw.url(u)
		if !ok {
			continue
		}
		in["url"] = quote(mapped)
		kept = append(kept, in)
	}
	return json.Marshal(kept)
}

// url maps one of the agent's URLs to the gateway's, or reports that it
// is not at or below the agent's URL.
func (rw Rewriter) url(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, rw.Agent.Scheme) || !strings.EqualFold(u.Host, rw.Agent.Host) {
		return "", false
	}
	base := strings.TrimSuffix(rw.Agent.Path, "/")
	rest, below := strings.CutPrefix(u.Path, base)
	switch {
	case !below || (rest != "" && rest[0] != '/'):
		return "", false
	case rest == "/":
		rest = ""
	}
	out := rw.Gateway + (&url.URL{Path: rest}).EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, true
}

// ExtendedCard rewrites a JSON-RPC answer to the extended-card method:
// its result is a card. An answer without a result (an error) is kept.
func (rw Rewriter) ExtendedCard(answer []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(answer, &doc); err != nil {
		return nil, fmt.Errorf("extended card answer: %w", err)
	}
	res, ok := doc["result"]
	if !ok || bytes.Equal(bytes.TrimSpace(res), []byte("null")) {
		return answer, nil
	}
	card, err := rw.Card(res)
	if err != nil {
		return nil, err
	}
	doc["result"] = card
	return json.Marshal(doc)
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
