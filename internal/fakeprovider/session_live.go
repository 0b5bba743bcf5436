package fakeprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// liveUsage is the usage the fake reports for its n-th model turn (from
// 1): the prompt counts the whole session's context again each turn.
func liveUsage(n int) SessionUsage {
	prompt, response := uint64(200*n+12), uint64(20+n)
	return SessionUsage{Input: prompt, Output: response, Cached: 0, Total: prompt + response}
}

// live serves a Gemini Live session: setupComplete after the setup, then
// per client turn (clientContent with turnComplete, or realtimeInput) a
// model turn of two parts, then turnComplete with the turn's usage; with
// LiveRunning a running figure comes first.
func (f *fakeSession) live() error {
	_, msg, err := f.c.Read(context.Background())
	if err != nil {
		return err
	}
	var setup struct {
		Setup *struct {
			Model string `json:"model"`
		} `json:"setup"`
	}
	if json.Unmarshal(msg, &setup) != nil || setup.Setup == nil {
		return f.c.Close(1007, "the first message must be setup")
	}
	f.model = strings.TrimPrefix(setup.Setup.Model, "models/")
	if err := f.send([]byte(`{"setupComplete":{}}`)); err != nil {
		return err
	}
	for {
		_, msg, err := f.c.Read(context.Background())
		if err != nil {
			return err
		}
		var in struct {
			ClientContent *struct {
				TurnComplete bool `json:"turnComplete"`
			} `json:"clientContent"`
			RealtimeInput json.RawMessage `json:"realtimeInput"`
		}
		if json.Unmarshal(msg, &in) != nil {
			continue
		}
		if in.RealtimeInput == nil && (in.ClientContent == nil || !in.ClientContent.TurnComplete) {
			continue
		}
		if err := f.liveTurn(); err != nil {
			return err
		}
		if err := f.afterResponse(); err != nil {
			return err
		}
	}
}

func (f *fakeSession) liveTurn() error {
	n := f.responses + 1
	u := liveUsage(n)
	msgs := []string{
		`{"serverContent":{"modelTurn":{"role":"model","parts":[{"text":"Hello"}]}}}`,
		`{"serverContent":{"modelTurn":{"role":"model","parts":[{"text":" again"}]}}}`,
	}
	if f.knobs.LiveRunning {
		msgs = append(msgs, fmt.Sprintf(`{"usageMetadata":{"promptTokenCount":%d,"responseTokenCount":%d,"totalTokenCount":%d}}`,
			u.Input, u.Output/2, u.Input+u.Output/2))
	}
	msgs = append(msgs, fmt.Sprintf(`{"usageMetadata":{"promptTokenCount":%d,"responseTokenCount":%d,"totalTokenCount":%d,`+
		`"promptTokensDetails":[{"modality":"TEXT","tokenCount":%d}],"responseTokensDetails":[{"modality":"TEXT","tokenCount":%d}]},`+
		`"serverContent":{"turnComplete":true,"modelTurn":{"parts":[{"text":%q}]}}}`,
		u.Input, u.Output, u.Total, u.Input, u.Output, f.pad()))
	for i, m := range msgs {
		if i == len(msgs)-1 {
			// Counted before the turn's last message goes, so a client that
			// has read it finds it counted.
			f.s.reported(u)
		}
		if err := f.send([]byte(m)); err != nil {
			return err
		}
	}
	return nil
}
