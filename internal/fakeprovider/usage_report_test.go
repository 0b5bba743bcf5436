package fakeprovider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
)

const testAdminKey = "sk-admin-test"

// clockServer serves d on a clock the test moves, with the admin key set.
func clockServer(t *testing.T, d fakeprovider.Dialect, start time.Time) (*fakeprovider.Server, string, *atomic.Int64) {
	t.Helper()
	var now atomic.Int64
	now.Store(start.Unix())
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: d, Key: testKey, AdminKey: testAdminKey,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	return s, base, &now
}

// usageCall sends body to base+path with header and decodes the JSON answer.
func usageCall(t *testing.T, method, u string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, u, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

func inum(v any) int64 { f, _ := v.(float64); return int64(f) }

// TestOpenAIUsageMonthOverPages: a month of traffic, a request a day,
// reported in daily buckets over pages of seven is read whole: every
// day's bucket once, in order, each holding what the day's answer
// reported, the cursor ending with the month.
func TestOpenAIUsageMonthOverPages(t *testing.T) {
	month := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	_, base, now := clockServer(t, fakeprovider.DialectOpenAI, month)
	auth := map[string]string{"Authorization": "Bearer " + testKey}
	want := map[int64][2]int64{} // day -> prompt, completion tokens the answers reported
	for d := 0; d < 31; d++ {
		day := month.AddDate(0, 0, d)
		now.Store(day.Add(time.Duration(d) * time.Hour / 2).Unix())
		status, out := usageCall(t, http.MethodPost, base+"/chat/completions", auth,
			fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"day %d %s"}]}`, d, bytes.Repeat([]byte("w "), d)))
		if status != 200 {
			t.Fatalf("day %d: %d %v", d, status, out)
		}
		u := out["usage"].(map[string]any)
		want[day.Unix()] = [2]int64{inum(u["prompt_tokens"]), inum(u["completion_tokens"])}
	}
	now.Store(month.AddDate(0, 1, 1).Unix())
	admin := map[string]string{"Authorization": "Bearer " + testAdminKey}
	q := url.Values{"start_time": {strconv.FormatInt(month.Unix(), 10)}, "end_time": {strconv.FormatInt(month.AddDate(0, 1, 0).Unix(), 10)},
		"bucket_width": {"1d"}, "limit": {"7"}, "group_by[]": {"model", "api_key_id"}}
	var starts []int64
	pages := 0
	for page := ""; pages < 10; pages++ {
		if page != "" {
			q.Set("page", page)
		}
		status, out := usageCall(t, http.MethodGet, base+"/organization/usage/completions?"+q.Encode(), admin, "")
		if status != 200 || out["object"] != "page" {
			t.Fatalf("page %d: %d %v", pages, status, out)
		}
		for _, b := range out["data"].([]any) {
			b := b.(map[string]any)
			start := inum(b["start_time"])
			if b["object"] != "bucket" || inum(b["end_time"]) != start+86400 {
				t.Fatalf("bucket %v", b)
			}
			starts = append(starts, start)
			rs := b["results"].([]any)
			if len(rs) != 1 {
				t.Fatalf("bucket %d: %d results, want 1", start, len(rs))
			}
			r := rs[0].(map[string]any)
			got := [2]int64{inum(r["input_tokens"]), inum(r["output_tokens"])}
			if got != want[start] || inum(r["num_model_requests"]) != 1 || r["model"] != "gpt-4o-mini" ||
				r["api_key_id"] != fakeprovider.KeyID(fakeprovider.DialectOpenAI, testKey) || r["project_id"] != nil ||
				r["object"] != "organization.usage.completions.result" {
				t.Fatalf("bucket %d: %v, want input/output %v", start, r, want[start])
			}
		}
		if out["has_more"] != true {
			if out["next_page"] != nil {
				t.Fatalf("last page names a next one: %v", out["next_page"])
			}
			break
		}
		page = out["next_page"].(string)
	}
	if pages+1 != 5 || len(starts) != 31 {
		t.Fatalf("%d pages, %d buckets; want 5 pages of 31 buckets", pages+1, len(starts))
	}
	for i, s := range starts {
		if s != month.AddDate(0, 0, i).Unix() {
			t.Fatalf("bucket %d starts at %d, want %d", i, s, month.AddDate(0, 0, i).Unix())
		}
	}
}

// TestUsageAPIsNeedTheAdminKey: the traffic's own key, no key, or the
// admin key sent the wrong way is a 401 in the API's error shape; a
// documented parameter out of range is a 400; the admin key is taken.
func TestUsageAPIsNeedTheAdminKey(t *testing.T) {
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	_, oBase, _ := clockServer(t, fakeprovider.DialectOpenAI, day)
	_, aBase, _ := clockServer(t, fakeprovider.DialectAnthropic, day)
	oURL := oBase + "/organization/usage/completions?start_time=" + strconv.FormatInt(day.Unix()-86400, 10)
	aURL := aBase + "/organizations/usage_report/messages?starting_at=" + url.QueryEscape(day.AddDate(0, 0, -1).Format(time.RFC3339))
	ver := "2023-06-01"
	cases := []struct {
		name, url string
		header    map[string]string
		status    int
	}{
		{"openai: traffic key", oURL, map[string]string{"Authorization": "Bearer " + testKey}, 401},
		{"openai: none", oURL, nil, 401},
		{"openai: admin key as x-api-key", oURL, map[string]string{"X-Api-Key": testAdminKey}, 401},
		{"openai: admin key", oURL, map[string]string{"Authorization": "Bearer " + testAdminKey}, 200},
		{"openai: limit over 31", oURL + "&limit=32", map[string]string{"Authorization": "Bearer " + testAdminKey}, 400},
		{"openai: no start_time", oBase + "/organization/usage/embeddings", map[string]string{"Authorization": "Bearer " + testAdminKey}, 400},
		{"openai: embeddings has no batch grouping", oURL[:len(oBase)] + "/organization/usage/embeddings?start_time=0&group_by=batch", map[string]string{"Authorization": "Bearer " + testAdminKey}, 400},
		{"anthropic: traffic key", aURL, map[string]string{"X-Api-Key": testKey, "Anthropic-Version": ver}, 401},
		{"anthropic: none", aURL, map[string]string{"Anthropic-Version": ver}, 401},
		{"anthropic: admin key as bearer", aURL, map[string]string{"Authorization": "Bearer " + testAdminKey, "Anthropic-Version": ver}, 401},
		{"anthropic: no version", aURL, map[string]string{"X-Api-Key": testAdminKey}, 400},
		{"anthropic: bare group_by", aURL + "&group_by=model", map[string]string{"X-Api-Key": testAdminKey, "Anthropic-Version": ver}, 400},
		{"anthropic: admin key", aURL + "&group_by[]=model", map[string]string{"X-Api-Key": testAdminKey, "Anthropic-Version": ver}, 200},
	}
	for _, c := range cases {
		status, out := usageCall(t, http.MethodGet, c.url, c.header, "")
		if status != c.status {
			t.Errorf("%s: %d %v, want %d", c.name, status, out, c.status)
			continue
		}
		switch {
		case status == 401 && c.url == oURL && out["error"].(map[string]any)["code"] != "invalid_api_key":
			t.Errorf("%s: %v, want OpenAI's invalid_api_key", c.name, out)
		case status == 401 && c.url == aURL && out["error"].(map[string]any)["type"] != "authentication_error":
			t.Errorf("%s: %v, want Anthropic's authentication_error", c.name, out)
		}
	}
}

// TestAnthropicUsageReportShapeAndKnobs: the messages usage report splits
// input as Anthropic does (uncached apart from cache reads and writes),
// leaves ungrouped dimensions null, and the knobs set on POST
// /_fake/report skew one class, empty a dropped day and hide the lagging
// hours' buckets.
func TestAnthropicUsageReportShapeAndKnobs(t *testing.T) {
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	_, base, now := clockServer(t, fakeprovider.DialectAnthropic, day.Add(8*time.Hour))
	status, msg := usageCall(t, http.MethodPost, base+"/messages", map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01"},
		`{"model":"claude-haiku-4-5","max_tokens":64,"system":[{"type":"text","text":"a cached prefix of a few words","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("%d %v", status, msg)
	}
	u := msg["usage"].(map[string]any)
	now.Store(day.Add(30 * time.Hour).Unix())
	admin := map[string]string{"X-Api-Key": testAdminKey, "Anthropic-Version": "2023-06-01"}
	report := func() []any {
		t.Helper()
		q := url.Values{"starting_at": {day.Format(time.RFC3339)}, "ending_at": {day.AddDate(0, 0, 2).Format(time.RFC3339)}, "group_by[]": {"model"}}
		status, out := usageCall(t, http.MethodGet, base+"/organizations/usage_report/messages?"+q.Encode(), admin, "")
		if status != 200 || out["has_more"] != false || out["next_page"] != nil {
			t.Fatalf("%d %v", status, out)
		}
		return out["data"].([]any)
	}
	data := report()
	if len(data) != 2 || data[0].(map[string]any)["starting_at"] != "2026-11-02T00:00:00Z" || data[0].(map[string]any)["ending_at"] != "2026-11-03T00:00:00Z" {
		t.Fatalf("buckets %v", data)
	}
	r := data[0].(map[string]any)["results"].([]any)[0].(map[string]any)
	cc := r["cache_creation"].(map[string]any)
	if inum(r["uncached_input_tokens"]) != inum(u["input_tokens"]) || inum(r["cache_read_input_tokens"]) != inum(u["cache_read_input_tokens"]) ||
		inum(cc["ephemeral_5m_input_tokens"]) != inum(u["cache_creation_input_tokens"]) || inum(cc["ephemeral_1h_input_tokens"]) != 0 ||
		inum(r["output_tokens"]) != inum(u["output_tokens"]) || inum(u["cache_read_input_tokens"]) == 0 {
		t.Fatalf("result %v, answer's usage %v", r, u)
	}
	if r["model"] != "claude-haiku-4-5" || r["api_key_id"] != nil || r["workspace_id"] != nil || r["service_tier"] != nil {
		t.Errorf("grouped by model alone, yet %v", r)
	}
	if len(data[1].(map[string]any)["results"].([]any)) != 0 {
		t.Errorf("a day without traffic has results: %v", data[1])
	}

	set := func(body string) {
		t.Helper()
		if status, out := usageCall(t, http.MethodPost, base[:len(base)-len("/v1")]+"/_fake/report", nil, body); status != 200 {
			t.Fatalf("POST /_fake/report %s: %d %v", body, status, out)
		}
	}
	set(`{"skew":{"class":"output","factor":2}}`)
	if got := report()[0].(map[string]any)["results"].([]any)[0].(map[string]any); inum(got["output_tokens"]) != 2*inum(u["output_tokens"]) ||
		inum(got["uncached_input_tokens"]) != inum(u["input_tokens"]) {
		t.Errorf("output skewed by 2: %v", got)
	}
	set(`{"drop_days":["2026-11-02"]}`)
	if got := report(); len(got) != 2 || len(got[0].(map[string]any)["results"].([]any)) != 0 {
		t.Errorf("dropped day: %v", got)
	}
	set(`{"lag_hours":20}`)
	if got := report(); len(got) != 1 || len(got[0].(map[string]any)["results"].([]any)) != 1 {
		t.Errorf("lagging 20h at 06:00 the next day: %v, want the first day's bucket alone, its traffic at 08:00 in it", got)
	}
	set(`{"lag_hours":23}`)
	if got := report(); len(got) != 1 || len(got[0].(map[string]any)["results"].([]any)) != 0 {
		t.Errorf("lagging 23h at 06:00 the next day: %v, want the first day's bucket without its traffic at 08:00", got)
	}
	if status, _ := usageCall(t, http.MethodPost, base[:len(base)-len("/v1")]+"/_fake/report", nil, `{"skew":{"class":"reasoning","factor":2}}`); status != 400 {
		t.Errorf("a skew of a class no report carries: %d, want 400", status)
	}
}
