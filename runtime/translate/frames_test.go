package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// splitFrames cuts client output into SSE frames; it must end on a boundary.
func splitFrames(out []byte) ([][]byte, error) {
	if len(out) == 0 {
		return nil, nil
	}
	if !bytes.HasSuffix(out, []byte("\n\n")) {
		return nil, fmt.Errorf("output does not end on a frame boundary")
	}
	return bytes.Split(out[:len(out)-2], []byte("\n\n")), nil
}

// validOpenAIFrames checks Chat Completions stream output: data-only frames
// holding a chunk or an error object, [DONE] last.
func validOpenAIFrames(out []byte) error {
	frames, err := splitFrames(out)
	if err != nil {
		return err
	}
	for i, f := range frames {
		data, ok := bytes.CutPrefix(f, []byte("data: "))
		if !ok || bytes.ContainsAny(data, "\r\n") {
			return fmt.Errorf("frame %d is not one data line: %q", i, f)
		}
		if string(data) == "[DONE]" {
			if i != len(frames)-1 {
				return fmt.Errorf("frame %d: [DONE] is not last", i)
			}
			continue
		}
		var v struct {
			Object string          `json:"object"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("frame %d: %v: %s", i, err, data)
		}
		if v.Object != "chat.completion.chunk" && len(v.Error) == 0 {
			return fmt.Errorf("frame %d is neither a chunk nor an error: %s", i, data)
		}
	}
	return nil
}

// validAnthropicFrames checks Messages stream output: every frame an event
// line and a data line whose JSON type names the event.
func validAnthropicFrames(out []byte) error {
	frames, err := splitFrames(out)
	if err != nil {
		return err
	}
	for i, f := range frames {
		lines := bytes.Split(f, []byte("\n"))
		if len(lines) != 2 {
			return fmt.Errorf("frame %d is not an event line and a data line: %q", i, f)
		}
		name, ok1 := bytes.CutPrefix(lines[0], []byte("event: "))
		data, ok2 := bytes.CutPrefix(lines[1], []byte("data: "))
		if !ok1 || !ok2 {
			return fmt.Errorf("frame %d: %q", i, f)
		}
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("frame %d: %v: %s", i, err, data)
		}
		if v.Type != string(name) {
			return fmt.Errorf("frame %d: event %q carries type %q", i, name, v.Type)
		}
	}
	return nil
}
