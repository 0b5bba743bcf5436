package anthropic

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

func TestWriteErrorShape(t *testing.T) {
	rec := httptest.NewRecorder()
	Dialect{}.WriteError(rec, "req_1", dialect.Errorf(http.StatusRequestEntityTooLarge, dialect.CodeRequestTooLarge, "too big"))
	if rec.Code != http.StatusRequestEntityTooLarge || rec.Header().Get("request-id") != "req_1" {
		t.Fatalf("status %d, request-id %q", rec.Code, rec.Header().Get("request-id"))
	}
	var got struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "error" || got.Error.Type != "request_too_large" || got.Error.Message != "too big" ||
		got.Error.Details.ErrorCode != "request_too_large" || got.RequestID != "req_1" {
		t.Fatalf("body %s", rec.Body)
	}
}

func TestPaging(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		query string
		want  []string
		more  bool
	}{
		{"", names, false},
		{"limit=2", []string{"a", "b"}, true},
		{"limit=2&after_id=b", []string{"c", "d"}, true},
		{"limit=2&after_id=d", []string{"e"}, false},
		{"limit=2&before_id=d", []string{"b", "c"}, true},
		{"limit=5&before_id=c", []string{"a", "b"}, false},
		{"after_id=zz", []string{}, false},
		{"limit=0", names, false},
		{"limit=junk", names, false},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		rec := httptest.NewRecorder()
		Dialect{}.WriteModelList(rec, names, q)
		var got struct {
			Data []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			} `json:"data"`
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, m := range got.Data {
			if m.Type != "model" {
				t.Errorf("%s: type %q", tt.query, m.Type)
			}
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, tt.want) || got.HasMore != tt.more {
			t.Errorf("%q: got %v more=%v, want %v more=%v", tt.query, ids, got.HasMore, tt.want, tt.more)
		}
		if len(ids) > 0 && (*got.FirstID != ids[0] || *got.LastID != ids[len(ids)-1]) {
			t.Errorf("%q: first/last %s/%s", tt.query, *got.FirstID, *got.LastID)
		}
	}
}

// TestFidelityDetails: a fidelity refusal's data is error.pistra, as in
// the OpenAI dialect, and is also spread into error.details beside
// error_code for clients written before error.pistra.
func TestFidelityDetails(t *testing.T) {
	f := &dialect.Fidelity{Used: plan.Of(plan.CapExtendedThinking), Candidates: []dialect.Candidate{{
		Provider: "bedrockish", Channel: "compat", Tier: plan.TierProviderCompat, Model: "claude",
		Lost: plan.Of(plan.CapExtendedThinking), Origin: "overlays/b.cue", VerifiedBy: "https://b.example",
	}}}
	const data = `"used":["extended_thinking"],"candidates":[{"provider":"bedrockish","channel":"compat",` +
		`"tier":"provider_compat","model":"claude","lost":["extended_thinking"],"origin":"overlays/b.cue","verified_by":"https://b.example"}]`
	for _, tt := range []struct {
		fid          *dialect.Fidelity
		want, pistra string
	}{
		{f, `{"error_code":"fidelity_loss",` + data + `}`, `{` + data + `}`},
		{nil, `{"error_code":"fidelity_loss"}`, ``},
	} {
		rec := httptest.NewRecorder()
		Dialect{}.WriteError(rec, "req_1", &dialect.Error{Status: 400, Code: dialect.CodeFidelityLoss, Message: "lossy", Fidelity: tt.fid})
		var got struct {
			Error struct {
				Details json.RawMessage `json:"details"`
				Pistra  json.RawMessage `json:"pistra"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Error.Details) != tt.want {
			t.Errorf("details %s\nwant    %s", got.Error.Details, tt.want)
		}
		if string(got.Error.Pistra) != tt.pistra {
			t.Errorf("pistra %s\nwant   %s", got.Error.Pistra, tt.pistra)
		}
	}
}
