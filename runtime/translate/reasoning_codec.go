package translate

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Reasoning crosses the Responses/Messages boundary as an opaque token
// each side already carries back unchanged: a Responses client replays a
// reasoning item's encrypted_content, an Anthropic client a thinking
// block's signature. What the other side needs to accept the replay is
// packed into that token, tagged so that a token minted elsewhere (a real
// OpenAI or Anthropic one, after a model switch) is recognised as foreign
// and left out rather than sent where it means nothing.

const (
	// thinkingTag prefixes a Responses encrypted_content that holds an
	// Anthropic thinking or redacted_thinking block.
	thinkingTag = "pistra.thinking.v1:"
	// reasoningTag prefixes an Anthropic signature that holds a Responses
	// reasoning item's id and encrypted_content.
	reasoningTag = "pistra.reasoning.v1:"
)

// packedThinking is an Anthropic thinking block as packed.
type packedThinking struct {
	Type      string  `json:"type"`
	Thinking  *string `json:"thinking,omitempty"`
	Signature string  `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
}

// appendPackedThinking appends the encrypted_content for a thinking block
// whose JSON encoding is block.
func appendPackedThinking(dst, block []byte) []byte {
	dst = append(dst, thinkingTag...)
	return base64.StdEncoding.AppendEncode(dst, block)
}

// packThinking is the encrypted_content for Anthropic block b.
func packThinking(b *antBlock) string {
	block, _ := marshal(packedThinking{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature, Data: b.Data})
	return string(appendPackedThinking(nil, block)) // strings only: cannot fail
}

// unpackThinking reads the thinking block packed in a reasoning item's
// encrypted_content; ok is false for a foreign or damaged one.
func unpackThinking(enc string) (antBlock, bool) {
	var p packedThinking
	if !unpack(enc, thinkingTag, &p) || (p.Type != "thinking" && p.Type != "redacted_thinking") {
		return antBlock{}, false
	}
	if p.Type == "thinking" && p.Thinking == nil {
		p.Thinking = new(string)
	}
	return antBlock{Type: p.Type, Thinking: p.Thinking, Signature: p.Signature, Data: p.Data}, true
}

// packedReasoning is a Responses reasoning item as packed.
type packedReasoning struct {
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
}

// packReasoning is the thinking signature for a reasoning item.
func packReasoning(id, encrypted string) string {
	b, _ := marshal(packedReasoning{ID: id, EncryptedContent: encrypted}) // strings only
	return reasoningTag + base64.StdEncoding.EncodeToString(b)
}

// unpackReasoning reads the reasoning item packed in a thinking block's
// signature; ok is false for a foreign or damaged one.
func unpackReasoning(signature string) (packedReasoning, bool) {
	var p packedReasoning
	ok := unpack(signature, reasoningTag, &p) && p.EncryptedContent != ""
	return p, ok
}

func unpack(token, tag string, v any) bool {
	rest, ok := strings.CutPrefix(token, tag)
	if !ok {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	return err == nil && json.Unmarshal(b, v) == nil
}
