package fakeprovider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// Anthropic's thinking signatures and OpenAI's encrypted reasoning are
// opaque tokens a stateless client must hand back unchanged with the
// history, and the APIs refuse ones they did not issue. The fake's tokens
// are sealed the same way: the payload and a MAC over it, so a replay the
// fake made verifies and anything altered or invented does not.

const macBytes = 16

func seal(kind, payload string) string {
	mac := sealMAC(kind, payload)
	return base64.StdEncoding.EncodeToString(append(mac[:macBytes:macBytes], payload...))
}

// unseal returns a sealed token's payload and whether the fake sealed it.
func unseal(kind, token string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil || len(raw) < macBytes {
		return "", false
	}
	mac := sealMAC(kind, string(raw[macBytes:]))
	return string(raw[macBytes:]), hmac.Equal(raw[:macBytes], mac[:macBytes])
}

func sealMAC(kind, payload string) [sha256.Size]byte {
	return sha256.Sum256([]byte("fakeprovider " + kind + ":" + payload))
}

// thinkingSignature is the signature of a thinking block: it seals the
// whole thought, so a block whose text is omitted still verifies.
func thinkingSignature(thinking string) string { return seal("thinking", thinking) }

// encryptedReasoning is a reasoning item's encrypted_content.
func encryptedReasoning(id string) string { return seal("reasoning", id) }

// checkThinkingReplay refuses replayed thinking blocks whose signature the
// fake did not issue for their text, as Anthropic does.
func checkThinkingReplay(msgs []wireMessage) *apiError {
	for i, m := range msgs {
		if m.Role != "assistant" || !present(m.Content) || m.Content[0] != '[' {
			continue
		}
		var blocks []struct {
			Type      string  `json:"type"`
			Thinking  string  `json:"thinking"`
			Signature *string `json:"signature"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // contentText reports the malformed content
		}
		for j, b := range blocks {
			if b.Type != "thinking" {
				continue
			}
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			if b.Signature == nil {
				return badRequest(where+".thinking.signature: Field required", "")
			}
			if thought, ok := unseal("thinking", *b.Signature); !ok || (b.Thinking != "" && b.Thinking != thought) {
				return badRequest(where+": Invalid `signature` in `thinking` block", "")
			}
		}
	}
	return nil
}

// replayedReasoning is a reasoning item of a Responses input.
type replayedReasoning struct {
	ID               string  `json:"id"`
	EncryptedContent *string `json:"encrypted_content"`
}

// checkReasoningReplay refuses replayed reasoning the API could not use:
// encrypted content it did not issue, or, with store false, an item that
// carries none (nothing is stored to look its id up in).
func checkReasoningReplay(items []replayedReasoning, store bool) *apiError {
	for _, it := range items {
		switch {
		case it.EncryptedContent != nil:
			if _, ok := unseal("reasoning", *it.EncryptedContent); !ok {
				return badRequest("The encrypted content for item "+it.ID+" could not be verified.", "input")
			}
		case !store:
			return &apiError{status: http.StatusNotFound, param: "input", message: "Item with id '" + it.ID +
				"' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."}
		}
	}
	return nil
}
