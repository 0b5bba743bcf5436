package a2a

import (
	"errors"
	"testing"
)

func TestReadJSONRPCBothGenerations(t *testing.T) {
	cases := []struct {
		body   string
		method string
		class  Class
		stream bool
		id     string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, "SendMessage", ClassSend, false, "1"},
		{`{"jsonrpc":"2.0","id":"a","method":"SendMessage"}`, "SendMessage", ClassSend, false, `"a"`},
		{`{"method":"message/stream","jsonrpc":"2.0","id":2}`, "SendStreamingMessage", ClassStream, true, "2"},
		{`{"jsonrpc":"2.0","id":3,"method":"SendStreamingMessage"}`, "SendStreamingMessage", ClassStream, true, "3"},
		{`{"jsonrpc":"2.0","id":4,"method":"tasks/get"}`, "GetTask", ClassTaskRead, false, "4"},
		{`{"jsonrpc":"2.0","id":4,"method":"GetTask"}`, "GetTask", ClassTaskRead, false, "4"},
		{`{"jsonrpc":"2.0","id":4,"method":"ListTasks"}`, "ListTasks", ClassTaskRead, false, "4"},
		{`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel"}`, "CancelTask", ClassFree, false, "5"},
		{`{"jsonrpc":"2.0","id":5,"method":"CancelTask"}`, "CancelTask", ClassFree, false, "5"},
		{`{"jsonrpc":"2.0","id":6,"method":"tasks/resubscribe"}`, "SubscribeToTask", ClassFree, true, "6"},
		{`{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask"}`, "SubscribeToTask", ClassFree, true, "6"},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/pushNotificationConfig/set"}`, "CreateTaskPushNotificationConfig", ClassFree, false, "7"},
		{`{"jsonrpc":"2.0","id":7,"method":"SetTaskPushNotificationConfig"}`, "CreateTaskPushNotificationConfig", ClassFree, false, "7"},
		{`{"jsonrpc":"2.0","id":8,"method":"agent/getAuthenticatedExtendedCard"}`, "GetExtendedAgentCard", ClassCard, false, "8"},
		{`{"jsonrpc":"2.0","id":8,"method":"GetExtendedAgentCard"}`, "GetExtendedAgentCard", ClassCard, false, "8"},
		{`{"jsonrpc":"2.0","id":null,"method":"x/custom"}`, "x/custom", ClassOther, false, "null"},
		{`{"jsonrpc":"2.0","method":"message\/send"}`, "SendMessage", ClassSend, false, ""},
		{`{"jsonrpc":"2.0","id":9,"m\u0065thod":"message/send"}`, "SendMessage", ClassSend, false, "9"},
		{`{"jsonrpc":"2.0","id":9,"Method":"message/send"}`, "SendMessage", ClassSend, false, "9"},
	}
	for _, c := range cases {
		got, err := ReadJSONRPC([]byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if got.Method != c.method || got.Class != c.class || got.Stream != c.stream || string(got.ID) != c.id || got.Binding != JSONRPC {
			t.Errorf("%s: got %+v (id %s), want %s %v stream=%v id %s", c.body, got, got.ID, c.method, c.class, c.stream, c.id)
		}
	}
}

func TestReadJSONRPCRefusesWhatItCannotRead(t *testing.T) {
	cases := []struct {
		body string
		want error
	}{
		{`[{"jsonrpc":"2.0","id":1,"method":"message/send"}]`, ErrBatch},
		{`"message/send"`, ErrNotJSONRPC},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send"`, ErrNotJSONRPC},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send"} {}`, ErrNotJSONRPC},
		{`{"jsonrpc":"1.0","id":1,"method":"message/send"}`, ErrNotJSONRPC},
		{`{"id":1,"method":"message/send"}`, ErrNotJSONRPC},
		{`{"jsonrpc":"2.0","id":1}`, ErrNoMethod},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, ErrNoMethod},
		// A free method before a charged one the agent's decoder may read.
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","METHOD":"message/send"}`, ErrNoMethod},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","method":"message/send"}`, ErrNoMethod},
	}
	for _, c := range cases {
		if _, err := ReadJSONRPC([]byte(c.body)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.body, err, c.want)
		}
	}
}

func TestReadHTTPJSONRoutes(t *testing.T) {
	cases := []struct {
		method, path string
		op           string
		class        Class
		stream       bool
	}{
		{"POST", "/message:send", "SendMessage", ClassSend, false},
		{"POST", "/v1/message:send", "SendMessage", ClassSend, false},
		{"POST", "/rest/message:stream", "SendStreamingMessage", ClassStream, true},
		{"GET", "/tasks/abc", "GetTask", ClassTaskRead, false},
		{"GET", "/v1/tasks/abc", "GetTask", ClassTaskRead, false},
		{"GET", "/tasks", "ListTasks", ClassTaskRead, false},
		{"POST", "/tasks/abc:cancel", "CancelTask", ClassFree, false},
		{"POST", "/tasks/abc:subscribe", "SubscribeToTask", ClassFree, true},
		{"GET", "/v1/tasks/abc:subscribe", "SubscribeToTask", ClassFree, true},
		{"POST", "/tasks/abc/pushNotificationConfigs", "TaskPushNotificationConfig", ClassFree, false},
		{"GET", "/tasks/abc/pushNotificationConfigs/c1", "TaskPushNotificationConfig", ClassFree, false},
		{"GET", "/extendedAgentCard", "GetExtendedAgentCard", ClassCard, false},
		{"GET", "/v1/card", "GetExtendedAgentCard", ClassCard, false},
		{"POST", "/tasks/abc", "POST /tasks/abc", ClassOther, false},
		{"GET", "/message:send", "GET /message:send", ClassOther, false},
		{"POST", "/custom/thing", "POST /custom/thing", ClassOther, false},
	}
	for _, c := range cases {
		got := ReadHTTPJSON(c.method, c.path)
		if got.Method != c.op || got.Class != c.class || got.Stream != c.stream || got.Binding != HTTPJSON || got.ID != nil {
			t.Errorf("%s %s: got %+v, want %s %v stream=%v", c.method, c.path, got, c.op, c.class, c.stream)
		}
	}
}

func TestOnlyFreeAndCardClassesDrawNothing(t *testing.T) {
	for c := ClassFree; c <= ClassOther; c++ {
		want := c != ClassFree && c != ClassCard
		if c.Charged() != want {
			t.Errorf("%v.Charged() = %v, want %v", c, c.Charged(), want)
		}
		if c.String() == "" {
			t.Errorf("class %d has no label", c)
		}
	}
}
