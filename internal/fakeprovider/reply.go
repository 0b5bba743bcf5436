package fakeprovider

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What the fake "model" says is a pure function of the request, so tests can
// predict it: a fixed opening, then the first words of the last user message,
// then, when that message asks for an answer of some number of words (as
// "a 500-word essay" does), a filler sentence repeated to that length, so a
// small token limit cuts a long answer as it would a real model's.

const (
	replyOpening = "Hello from the fake provider. You said:"
	echoedWords  = 6
	// argumentFragment is the size of the pieces tool-call arguments stream in.
	argumentFragment = 8
	// maxAskedWords bounds the length a message can ask for.
	maxAskedWords  = 4000
	fillerSentence = "Here is more of the answer you asked for."
)

// askedWords matches a requested answer length: "500-word", "200 words".
var askedWords = regexp.MustCompile(`(?i)\b(\d{1,6})[- ]words?\b`)

// ReplyText is the full text the fake answers a conversation whose last user
// message is lastUser with, before stop sequences and token limits cut it.
func ReplyText(lastUser string) string {
	text := replyOpening + " " + firstWords(lastUser) + "."
	m := askedWords.FindStringSubmatch(lastUser)
	if m == nil {
		return text
	}
	want, _ := strconv.Atoi(m[1])
	var sb strings.Builder
	sb.WriteString(text)
	for words := len(strings.Fields(text)); words < min(want, maxAskedWords); words += len(strings.Fields(fillerSentence)) {
		sb.WriteString(" " + fillerSentence)
	}
	return sb.String()
}

func thinkingText(lastUser string) string {
	return "The user wrote: " + firstWords(lastUser) + ". A short, friendly answer will do."
}

func firstWords(s string) string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return "nothing"
	}
	return strings.Join(words[:min(len(words), echoedWords)], " ")
}

// pieces splits text into the token-sized pieces the fake streams and counts
// as completion tokens: each word with the space before it.
func pieces(text string) []string {
	if text == "" {
		return nil
	}
	out := make([]string, 0, strings.Count(text, " ")+1)
	start := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			out = append(out, text[start:i])
			start = i
		}
	}
	return append(out, text[start:])
}

// fragments splits s into pieces of about size bytes without splitting a
// UTF-8 sequence; tool-call arguments stream this way.
func fragments(s string, size int) []string {
	out := make([]string, 0, len(s)/size+1)
	for len(s) > size {
		cut := size
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = size
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// reply is generated text after stop sequences and the token limit.
type reply struct {
	text   string
	pieces []string
	// stop is the stop sequence that ended the text, if one did.
	stop string
	// truncated reports that the token limit cut the text.
	truncated bool
}

// newReply cuts full at the earliest stop sequence, then to at most limit
// pieces of those split makes (limit < 0: no limit).
func newReply(full string, stops []string, limit int, split func(string) []string) reply {
	r := reply{text: full}
	at := -1
	for _, s := range stops {
		if s == "" {
			continue
		}
		if i := strings.Index(full, s); i >= 0 && (at < 0 || i < at) {
			at, r.stop = i, s
		}
	}
	if at >= 0 {
		r.text = full[:at]
	}
	r.pieces = split(r.text)
	if limit >= 0 && len(r.pieces) > limit {
		r.pieces = r.pieces[:limit]
		kept := 0
		for _, p := range r.pieces {
			kept += len(p)
		}
		r.text = r.text[:kept]
		r.truncated = true
		r.stop = ""
	}
	return r
}

func (r reply) tokens() int { return len(r.pieces) }

// finish is OpenAI's finish_reason for a text reply.
func (r reply) finish() string {
	if r.truncated {
		return "length"
	}
	return "stop"
}

// promptTokens derives a prompt's token count from its text size, at the
// usual four bytes a token.
func promptTokens(textBytes int) int {
	return max(1, textBytes/4)
}

// textTokens counts tokens of text that is not streamed in pieces (tool-call
// names and arguments).
func textTokens(s string) int {
	return max(1, len(s)/4)
}

// openAICachedTokens reports a cache hit the way OpenAI does: prompts of at
// least 1024 tokens are cached in 128-token steps. The fake behaves as if an
// identical request had warmed the cache, reporting the longest step-aligned
// prefix short of the whole prompt, so one large request shows the split.
func openAICachedTokens(prompt int) int {
	if prompt < 1024 {
		return 0
	}
	return (prompt - 1) / 128 * 128
}

// reasoningTokens is the hidden reasoning an OpenAI reasoning_effort buys.
func reasoningTokens(effort string) int {
	switch effort {
	case "", "none":
		return 0
	case "minimal":
		return 8
	case "low":
		return 16
	case "medium":
		return 32
	case "high":
		return 64
	}
	return 128
}
