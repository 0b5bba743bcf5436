package admin

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUsageRoute: the day's rows in the documented shape, every field
// named, an empty list for a day without rows, 400 for a day that is not
// YYYY-MM-DD, and the admin token required.
func TestUsageRoute(t *testing.T) {
	h, err := Handler("s3cret", &fakeController{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, auth string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := get("/admin/v1/usage?day=2026-12-01", "Bearer s3cret")
	want := `"day":"2026-12-01",` // as_of varies
	rows := `"retention_days":62,"rows":[{"provider":"openai","model":"gpt-4o-mini","key_id":"key_abc","workspace_id":"",` +
		`"requests":3,"estimated_requests":1,"input_tokens":100,"cached_input_tokens":40,"cache_creation_input_tokens":0,` +
		`"output_tokens":20,"reasoning_tokens":5}]}`
	if code != 200 || !strings.Contains(body, want) || !strings.Contains(body, rows) {
		t.Fatalf("usage: %d %s", code, body)
	}
	if code, body := get("/admin/v1/usage?day=2026-11-30", "Bearer s3cret"); code != 200 || !strings.Contains(body, `"rows":[]`) {
		t.Errorf("a day without rows: %d %s", code, body)
	}
	if code, body := get("/admin/v1/usage?day=12/01/2026", "Bearer s3cret"); code != 400 || !strings.Contains(body, "YYYY-MM-DD") {
		t.Errorf("a malformed day: %d %s", code, body)
	}
	if code, _ := get("/admin/v1/usage?day=2026-12-01", ""); code != 401 {
		t.Errorf("without the admin token: %d", code)
	}
}
