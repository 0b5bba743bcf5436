package jsonrpc

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
)

func TestReadMessages(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		batch bool
		want  []Message
	}{
		{"call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"name":"x"}}}`, false,
			[]Message{{ID: []byte("7"), Method: "tools/call", Name: "search"}}},
		{"string id, uri", `{"id" : "a\"b" ,"method":"resources/read","params":{"uri":"file:///x"},"jsonrpc":"2.0"}`, false,
			[]Message{{ID: []byte(`"a\"b"`), Method: "resources/read", Name: "file:///x"}}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false,
			[]Message{{Method: "notifications/initialized"}}},
		{"null id is none", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, false, []Message{{Method: "ping"}}},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, false, []Message{{ID: []byte("3")}}},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}},{"jsonrpc":"2.0","method":"n"}]`, true,
			[]Message{{ID: []byte("1"), Method: "prompts/get", Name: "p"}, {Method: "n"}}},
	}
	for _, c := range cases {
		got, batch, err := ReadMessages([]byte(c.body), nil)
		if err != nil || batch != c.batch || len(got) != len(c.want) {
			t.Fatalf("%s: got %+v batch %v err %v", c.name, got, batch, err)
		}
		for i := range got {
			if string(got[i].ID) != string(c.want[i].ID) || got[i].Method != c.want[i].Method || got[i].Name != c.want[i].Name {
				t.Errorf("%s[%d]: got %+v (id %s), want %+v (id %s)", c.name, i, got[i], got[i].ID, c.want[i], c.want[i].ID)
			}
		}
	}
	if !(&Message{ID: []byte("1"), Method: "x"}).IsRequest() || (&Message{Method: "x"}).IsRequest() {
		t.Error("IsRequest: a request has a method and an id")
	}
	for _, bad := range []string{`{"id":1,"method":"x"}`, `{"jsonrpc":"1.0","id":1,"method":"x"}`, `[]`, `"x"`, `{"jsonrpc":"2.0"} {}`,
		`{"jsonrpc":"2.0","method":3}`, `[{"jsonrpc":"2.0","method":"a"},7]`} {
		if _, _, err := ReadMessages([]byte(bad), nil); err == nil {
			t.Errorf("%s: read as JSON-RPC", bad)
		}
	}
}

func TestReadResponses(t *testing.T) {
	var got []Response
	data := `[{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}},` +
		`{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"no"}},` +
		`{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{}}},` +
		`{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{}},` +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"result":1}}]`
	ReadResponses([]byte(data), func(r Response) { got = append(got, r) })
	want := []Response{{ID: []byte("1")}, {ID: []byte(`"b"`), Failed: true}, {ID: []byte("3"), InputRequired: true}}
	if len(got) != len(want) {
		t.Fatalf("got %d responses, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if string(got[i].ID) != string(want[i].ID) || got[i].Failed != want[i].Failed || got[i].InputRequired != want[i].InputRequired {
			t.Errorf("[%d]: got %+v, want %+v", i, got[i], want[i])
		}
	}
	n := 0
	ReadResponses([]byte(`not json`), func(Response) { n++ })
	if n != 0 {
		t.Error("read a response out of garbage")
	}
}

func TestWriteError(t *testing.T) {
	e := &dialect.Error{Status: 429, Code: dialect.CodeBudgetExceeded, Message: `budget "calls" is "full"`, RetryAfter: 1500 * time.Millisecond}
	rec := httptest.NewRecorder()
	WriteError(rec, http.StatusOK, [][]byte{[]byte("1"), []byte(`"x"`)}, true, e)
	var out []struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				PistraCode string `json:"pistra_code"`
				Status     int    `json:"status"`
				RetryAfter int    `json:"retry_after"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: %v", rec.Body, err)
	}
	if len(out) != 2 || string(out[0].ID) != "1" || string(out[1].ID) != `"x"` || out[0].JSONRPC != "2.0" {
		t.Fatalf("got %s", rec.Body)
	}
	o := out[1].Error
	if o.Code != CodeRefused || o.Message != e.Message || o.Data.PistraCode != "budget_exceeded" || o.Data.Status != 429 || o.Data.RetryAfter != 2 {
		t.Errorf("got %+v", o)
	}
	if rec.Code != 200 || rec.Header().Get("Retry-After") != "2" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("status %d, headers %v", rec.Code, rec.Header())
	}
	rec = httptest.NewRecorder()
	WriteError(rec, http.StatusForbidden, nil, false, &dialect.Error{Status: 403, Code: dialect.CodeServiceNotAllowed, Message: "no"})
	if rec.Code != 403 || rec.Body.String() != `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"no","data":{"pistra_code":"service_not_allowed","status":403}}}` {
		t.Errorf("got %d %s", rec.Code, rec.Body)
	}
}
