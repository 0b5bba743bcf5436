// Package jsonrpc reads what the gateway needs of JSON-RPC 2.0 traffic
// (the MCP and A2A wire) without unmarshalling it: the method, id and
// target name of each request a body holds, and of each response whether
// it is an error or asks for more input, and it writes the gateway's own
// refusals as JSON-RPC errors.
package jsonrpc

import (
	"bytes"
	"errors"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// Message is one JSON-RPC message of a client's body, as far as the
// gateway reads it. Its byte slices point into the body.
type Message struct {
	// ID is the raw id (a number, or a string with its quotes); nil for a
	// notification or a response.
	ID []byte
	// Method is the request's or notification's method, "" for a response.
	Method string
	// Name is params.name, or else params.uri: the tool, prompt or
	// resource a named request is for.
	Name string
}

// IsRequest reports whether m is a request: a method with an id.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// RequestIDs lists the ids of the requests in msgs: those an answer to
// the body, a refusal say, must answer.
func RequestIDs(msgs []Message) [][]byte {
	var ids [][]byte
	for i := range msgs {
		if msgs[i].IsRequest() {
			ids = append(ids, msgs[i].ID)
		}
	}
	return ids
}

// ErrNotRPC is returned for a body that is not a JSON-RPC message or a
// batch of them.
var ErrNotRPC = errors.New("not a JSON-RPC 2.0 message: want an object with jsonrpc \"2.0\", or an array of them")

// ReadMessages reads the messages of body into out (reset first): one
// for an object, one per element for a batch. batch reports an array.
func ReadMessages(body []byte, out []Message) (msgs []Message, batch bool, err error) {
	out = out[:0]
	s := jsonscan.New(body)
	switch s.Kind() {
	case jsonscan.Object:
		var m Message
		if !readMessage(body, &s, &m) {
			return out, false, ErrNotRPC
		}
		out = append(out, m)
	case jsonscan.Array:
		batch = true
		for el := s.Array(); el.Next(); {
			var m Message
			if !readMessage(body, &s, &m) {
				return out, true, ErrNotRPC
			}
			out = append(out, m)
		}
		if len(out) == 0 {
			return out, true, ErrNotRPC
		}
	default:
		return out, false, ErrNotRPC
	}
	if s.End(); s.Bad() {
		return out, batch, ErrNotRPC
	}
	return out, batch, nil
}

// readMessage reads one message object of body at s into m; false when it is not
// one.
func readMessage(body []byte, s *jsonscan.Scanner, m *Message) bool {
	if s.Kind() != jsonscan.Object {
		s.Skip()
		return false
	}
	version := false
	var read uint8
	for mem := s.Object(); mem.Next(); {
		name, bit := member(mem.Key())
		if read&bit != 0 {
			return false
		}
		read |= bit
		switch name {
		case "jsonrpc":
			v, ok := s.RawString()
			version = ok && string(v) == "2.0"
		case "id":
			start := s.Pos()
			s.Skip()
			m.ID = bytes.TrimSpace(body[start:s.Pos()])
		case "method":
			v, ok := s.RawString()
			if !ok {
				return false
			}
			m.Method = unquote(v)
		case "params":
			m.Name = readName(s)
		default:
			s.Skip()
		}
	}
	if string(m.ID) == "null" {
		m.ID = nil
	}
	return version && !s.Bad()
}

// readName reads params.name, else params.uri.
func readName(s *jsonscan.Scanner) string {
	var name, uri string
	for mem := s.Object(); mem.Next(); {
		switch string(mem.Key()) {
		case "name":
			if v, ok := s.RawString(); ok {
				name = unquote(v)
			}
		case "uri":
			if v, ok := s.RawString(); ok {
				uri = unquote(v)
			}
		default:
			s.Skip()
		}
	}
	if name != "" {
		return name
	}
	return uri
}

func unquote(raw []byte) string {
	b, ok := jsonscan.Unquote(nil, raw)
	if !ok {
		return string(raw)
	}
	return string(b)
}
