package openai

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

func TestWriteErrorShape(t *testing.T) {
	tests := []struct {
		err      *dialect.Error
		wantType string
	}{
		{&dialect.Error{Status: 404, Code: dialect.CodeModelNotFound, Message: "no such model", Param: "model"}, "invalid_request_error"},
		{&dialect.Error{Status: 401, Code: dialect.CodeInvalidAPIKey, Message: "bad key"}, "invalid_request_error"},
		{&dialect.Error{Status: 403, Code: dialect.CodeModelNotAllowed, Message: "not yours"}, "permission_error"},
		{&dialect.Error{Status: 502, Code: dialect.CodeUpstreamUnreachable, Message: "down"}, "server_error"},
		{&dialect.Error{Status: 415, Code: dialect.CodeUnsupportedMediaType, Message: "json only"}, "invalid_request_error"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		Dialect{}.WriteError(rec, "req_9", tt.err)
		var got struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    string  `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		e := got.Error
		if rec.Code != tt.err.Status || e.Code != string(tt.err.Code) || e.Type != tt.wantType || e.Message != tt.err.Message {
			t.Errorf("%d: body %s", rec.Code, rec.Body)
		}
		if (e.Param == nil) != (tt.err.Param == "") {
			t.Errorf("param %v for %q", e.Param, tt.err.Param)
		}
		if rec.Header().Get("x-request-id") != "req_9" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", rec.Header())
		}
	}
}

func TestModelList(t *testing.T) {
	rec := httptest.NewRecorder()
	Dialect{}.WriteModelList(rec, []string{"fast", "gpt-4o"}, nil)
	var got struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || got.Object != "list" || len(got.Data) != 2 || got.Data[1].ID != "gpt-4o" || got.Data[0].Object != "model" {
		t.Fatalf("body %s", rec.Body)
	}
}

// TestFidelityDetails: a fidelity refusal keeps the standard members and
// adds error.pistra; any other error has no pistra member at all.
func TestFidelityDetails(t *testing.T) {
	f := &dialect.Fidelity{Used: plan.Of(plan.CapStrictTools, plan.CapMultiChoice), Candidates: []dialect.Candidate{{
		Provider: "vendor", Channel: "compat", Tier: plan.TierProviderCompat, Model: "m",
		Lost: plan.Of(plan.CapStrictTools), Origin: "overlays/vendor.cue", VerifiedAt: "2026-11-20", VerifiedBy: "https://vendor.example/docs",
	}}}
	for _, tt := range []struct {
		fid  *dialect.Fidelity
		want string
	}{
		{f, `{"used":["strict_tools","multi_choice"],"candidates":[{"provider":"vendor","channel":"compat","tier":"provider_compat",` +
			`"model":"m","lost":["strict_tools"],"origin":"overlays/vendor.cue","verified_at":"2026-11-20","verified_by":"https://vendor.example/docs"}]}`},
		{nil, ""},
	} {
		rec := httptest.NewRecorder()
		Dialect{}.WriteError(rec, "req_1", &dialect.Error{Status: 400, Code: dialect.CodeFidelityLoss, Message: "lossy", Fidelity: tt.fid})
		var got struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if string(got.Error["pistra"]) != tt.want || string(got.Error["code"]) != `"fidelity_loss"` || string(got.Error["param"]) != "null" {
			t.Errorf("body %s", rec.Body)
		}
	}
}
