package a2a

import (
	"errors"
	"testing"

	"github.com/pistra/pistra/runtime/jsonrpc"
)

func TestReadJSONRPCBothGenerations(t *testing.T) {
	cases := []struct {
		body   string
		method string
		class  Class
		id     string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, "SendMessage", ClassMessage, "1"},
		{`{"jsonrpc":"2.0","id":"a","method":"SendMessage"}`, "SendMessage", ClassMessage, `"a"`},
		{`{"method":"message/stream","jsonrpc":"2.0","id":2}`, "SendStreamingMessage", ClassMessage, "2"},
		{`{"jsonrpc":"2.0","id":3,"method":"SendStreamingMessage"}`, "SendStreamingMessage", ClassMessage, "3"},
		{`{"jsonrpc":"2.0","id":4,"method":"tasks/get"}`, "GetTask", ClassTaskRead, "4"},
		{`{"jsonrpc":"2.0","id":4,"method":"GetTask"}`, "GetTask", ClassTaskRead, "4"},
		{`{"jsonrpc":"2.0","id":4,"method":"ListTasks"}`, "ListTasks", ClassTaskRead, "4"},
		{`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel"}`, "CancelTask", ClassTask, "5"},
		{`{"jsonrpc":"2.0","id":5,"method":"CancelTask"}`, "CancelTask", ClassTask, "5"},
		{`{"jsonrpc":"2.0","id":6,"method":"tasks/resubscribe"}`, "SubscribeToTask", ClassTask, "6"},
		{`{"jsonrpc":"2.0","id":6,"method":"SubscribeToTask"}`, "SubscribeToTask", ClassTask, "6"},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/pushNotificationConfig/set"}`, "CreateTaskPushNotificationConfig", ClassTask, "7"},
		{`{"jsonrpc":"2.0","id":7,"method":"SetTaskPushNotificationConfig"}`, "CreateTaskPushNotificationConfig", ClassTask, "7"},
		{`{"jsonrpc":"2.0","id":8,"method":"agent/getAuthenticatedExtendedCard"}`, "GetExtendedAgentCard", ClassCard, "8"},
		{`{"jsonrpc":"2.0","id":8,"method":"GetExtendedAgentCard"}`, "GetExtendedAgentCard", ClassCard, "8"},
		{`{"jsonrpc":"2.0","id":"c","method":"x/custom"}`, "x/custom", ClassOther, `"c"`},
		{`{"jsonrpc":"2.0","id":9,"method":"message\/send"}`, "SendMessage", ClassMessage, "9"},
		{`{"jsonrpc":"2.0","id":9,"m\u0065thod":"message/send"}`, "SendMessage", ClassMessage, "9"},
		{`{"jsonrpc":"2.0","id":9,"Method":"message/send"}`, "SendMessage", ClassMessage, "9"},
	}
	for _, c := range cases {
		got, err := ReadJSONRPC([]byte(c.body))
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if got.Method != c.method || got.Class != c.class || string(got.ID) != c.id || got.Binding != JSONRPC {
			t.Errorf("%s: got %+v (id %s), want %s %v id %s", c.body, got, got.ID, c.method, c.class, c.id)
		}
	}
}

func TestReadJSONRPCRefusesWhatItCannotRead(t *testing.T) {
	cases := []struct {
		body string
		want error
	}{
		{`[{"jsonrpc":"2.0","id":1,"method":"message/send"}]`, ErrBatch},
		{`{"jsonrpc":"2.0","method":"message/send"}`, ErrNotRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"message/send"}`, ErrNotRequest},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, ErrNotRequest},
		{`"message/send"`, jsonrpc.ErrNotRPC},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send"`, jsonrpc.ErrNotRPC},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send"} {}`, jsonrpc.ErrNotRPC},
		{`{"jsonrpc":"1.0","id":1,"method":"message/send"}`, jsonrpc.ErrNotRPC},
		{`{"id":1,"method":"message/send"}`, jsonrpc.ErrNotRPC},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, jsonrpc.ErrNotRPC},
		// A free method before a charged one the agent's decoder may read.
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","METHOD":"message/send"}`, jsonrpc.ErrNotRPC},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","method":"message/send"}`, jsonrpc.ErrNotRPC},
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
	}{
		{"POST", "/message:send", "SendMessage", ClassMessage},
		{"POST", "/v1/message:send", "SendMessage", ClassMessage},
		{"POST", "/rest/message:stream", "SendStreamingMessage", ClassMessage},
		{"GET", "/tasks/abc", "GetTask", ClassTaskRead},
		{"GET", "/v1/tasks/abc", "GetTask", ClassTaskRead},
		{"GET", "/tasks", "ListTasks", ClassTaskRead},
		{"POST", "/tasks/abc:cancel", "CancelTask", ClassTask},
		{"POST", "/tasks/abc:subscribe", "SubscribeToTask", ClassTask},
		{"GET", "/v1/tasks/abc:subscribe", "SubscribeToTask", ClassTask},
		{"POST", "/tasks/abc/pushNotificationConfigs", "TaskPushNotificationConfig", ClassTask},
		{"GET", "/tasks/abc/pushNotificationConfigs/c1", "TaskPushNotificationConfig", ClassTask},
		{"GET", "/extendedAgentCard", "GetExtendedAgentCard", ClassCard},
		{"GET", "/v1/card", "GetExtendedAgentCard", ClassCard},
		{"POST", "/tasks/abc", "POST /tasks/abc", ClassOther},
		{"GET", "/message:send", "GET /message:send", ClassOther},
		{"POST", "/custom/thing", "POST /custom/thing", ClassOther},
	}
	for _, c := range cases {
		got := ReadHTTPJSON(c.method, c.path)
		if got.Method != c.op || got.Class != c.class || got.Binding != HTTPJSON || got.ID != nil {
			t.Errorf("%s %s: got %+v, want %s %v", c.method, c.path, got, c.op, c.class)
		}
	}
}

func TestOnlyFreeAndCardClassesDrawNothing(t *testing.T) {
	for c := ClassTask; c <= ClassOther; c++ {
		want := c != ClassTask && c != ClassCard
		if c.Charged() != want {
			t.Errorf("%v.Charged() = %v, want %v", c, c.Charged(), want)
		}
		if c.String() == "" {
			t.Errorf("class %d has no label", c)
		}
	}
}

func TestClassifyAnswersForBothGenerations(t *testing.T) {
	for name, want := range map[string]struct {
		class   string
		charged bool
	}{
		"message/send": {"message", true}, "SendStreamingMessage": {"message", true},
		"tasks/get": {"task_read", true}, "ListTasks": {"task_read", true},
		"tasks/cancel": {"task", false}, "SubscribeToTask": {"task", false},
		"GetExtendedAgentCard": {"card", false}, "x/custom": {"other", true},
	} {
		if class, charged := (Protocol{}).Classify(name); class != want.class || charged != want.charged {
			t.Errorf("%s: %s %v, want %s %v", name, class, charged, want.class, want.charged)
		}
	}
}
