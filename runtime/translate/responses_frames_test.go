package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// validResponsesFrames checks Responses stream output as the SDK stream
// helpers and Codex read it: every frame an event line and a data line of
// that type (validAnthropicFrames' rule), sequence numbers counting from 0,
// response.created first, every item event addressed to an announced
// output index, and, when the stream ends, one terminal event, last, whose
// response id is a string and whose usage (on completed and incomplete)
// has integer counts.
func validResponsesFrames(out []byte) error {
	if err := validAnthropicFrames(out); err != nil {
		return err
	}
	frames, _ := splitFrames(out)
	announced := map[int]bool{}
	for i, f := range frames {
		_, data, _ := strings.Cut(string(f), "\ndata: ")
		var v struct {
			Type     string `json:"type"`
			Seq      *int   `json:"sequence_number"`
			Index    *int   `json:"output_index"`
			Response *struct {
				ID    string `json:"id"`
				Usage *struct {
					InputTokens  uint64 `json:"input_tokens"`
					OutputTokens uint64 `json:"output_tokens"`
					TotalTokens  uint64 `json:"total_tokens"`
				} `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return fmt.Errorf("frame %d: %v", i, err)
		}
		switch {
		case v.Seq == nil || *v.Seq != i:
			return fmt.Errorf("frame %d: sequence_number %v", i, v.Seq)
		case i == 0 && v.Type != "response.created":
			return fmt.Errorf("frame 0 is %s, not response.created", v.Type)
		case v.Type == "response.output_item.added" && v.Index != nil:
			announced[*v.Index] = true
		case v.Index != nil && !announced[*v.Index]:
			return fmt.Errorf("frame %d: %s for unannounced output %d", i, v.Type, *v.Index)
		}
		terminal := v.Type == "response.completed" || v.Type == "response.incomplete" || v.Type == "response.failed"
		if terminal && i != len(frames)-1 {
			return fmt.Errorf("frame %d: %s is not last", i, v.Type)
		}
		if terminal && (v.Response == nil || v.Response.ID == "" || (v.Type != "response.failed" && v.Response.Usage == nil)) {
			return fmt.Errorf("frame %d: %s without a response id or usage: %s", i, v.Type, data)
		}
	}
	return nil
}
