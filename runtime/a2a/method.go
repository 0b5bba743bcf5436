// Package a2a serves A2A agents behind the gateway at /a2a/{agent}: it
// reads which operation a request is (JSON-RPC in both generations of
// method names, the HTTP+JSON binding's routes), decides which draw the
// agent's cost_per_call, and serves the agent card with its URLs
// rewritten to the gateway's. The gate (runtime/agentcall) admits, sends,
// relays and settles. docs/a2a.md.
package a2a

import "strings"

// Class is what an operation is for metering: whether it draws
// cost_per_call, and the bounded label it is counted under.
type Class uint8

const (
	// ClassTask operations draw nothing: cancelling a task, re-attaching
	// to its stream, its push-notification settings. They manage work
	// already paid for at the door.
	ClassTask Class = iota
	// ClassMessage is a message sent, for a whole answer or a stream.
	ClassMessage
	// ClassTaskRead reads tasks (one, or a list: a list answers what a
	// read of each would, so leaving it free would make polling free).
	ClassTaskRead
	// ClassCard asks for the agent's card (the public one or the
	// extended one): discovery, free, and rewritten on the way out.
	ClassCard
	// ClassOther is an operation the gateway does not know (an
	// extension's method, a route of a newer binding). It is charged:
	// an agent that does not serve it answers an error, which is not.
	ClassOther
)

var classNames = [...]string{"task", "message", "task_read", "card", "other"}

// String is the class's metrics label.
func (c Class) String() string { return classNames[c] }

// Charged reports whether an operation of the class draws cost_per_call.
func (c Class) Charged() bool {
	switch c {
	case ClassTask, ClassCard:
		return false
	}
	return true
}

// op is an operation as the gateway knows it: its name in the v1.0
// vocabulary (the gRPC service's, which the v1.0 JSON-RPC binding uses)
// and its class.
type op struct {
	name  string
	class Class
}

// methods maps both generations of JSON-RPC method names to operations:
// v0.3's slash names and v1.0's PascalCase ones. Both push-config
// spellings of v1.0 (Create in the specification, Set in some SDKs) are
// the one operation.
var methods = func() map[string]op {
	send := op{"SendMessage", ClassMessage}
	stream := op{"SendStreamingMessage", ClassMessage}
	get := op{"GetTask", ClassTaskRead}
	list := op{"ListTasks", ClassTaskRead}
	cancel := op{"CancelTask", ClassTask}
	subscribe := op{"SubscribeToTask", ClassTask}
	pushSet := op{"CreateTaskPushNotificationConfig", ClassTask}
	pushGet := op{"GetTaskPushNotificationConfig", ClassTask}
	pushList := op{"ListTaskPushNotificationConfig", ClassTask}
	pushDelete := op{"DeleteTaskPushNotificationConfig", ClassTask}
	card := op{"GetExtendedAgentCard", ClassCard}
	return map[string]op{
		"message/send": send, "SendMessage": send,
		"message/stream": stream, "SendStreamingMessage": stream,
		"tasks/get": get, "GetTask": get,
		"tasks/list": list, "ListTasks": list,
		"tasks/cancel": cancel, "CancelTask": cancel,
		"tasks/resubscribe": subscribe, "SubscribeToTask": subscribe,
		"tasks/pushNotificationConfig/set": pushSet, "CreateTaskPushNotificationConfig": pushSet,
		"SetTaskPushNotificationConfig":    pushSet,
		"tasks/pushNotificationConfig/get": pushGet, "GetTaskPushNotificationConfig": pushGet,
		"tasks/pushNotificationConfig/list": pushList, "ListTaskPushNotificationConfig": pushList,
		"ListTaskPushNotificationConfigs":     pushList,
		"tasks/pushNotificationConfig/delete": pushDelete, "DeleteTaskPushNotificationConfig": pushDelete,
		"agent/getAuthenticatedExtendedCard": card, "GetExtendedAgentCard": card,
	}
}()

// method is the operation a JSON-RPC method name names; an unknown name
// is its own operation, of ClassOther.
func method(name string) op {
	if o, ok := methods[name]; ok {
		return o
	}
	return op{name: name, class: ClassOther}
}

// route is the operation of an HTTP+JSON binding request: method and the
// path below the agent's root. Routes are read by their last segments,
// so both v0.3's /v1 prefix and v1.0's bare paths (and an agent that
// mounts the binding under a prefix of its own) are known.
func route(httpMethod, path string) op {
	path = strings.TrimSuffix(path, "/")
	last := path[strings.LastIndexByte(path, '/')+1:]
	parent := strings.TrimSuffix(path, "/"+last)
	parent = parent[strings.LastIndexByte(parent, '/')+1:]
	switch {
	case httpMethod == "POST" && last == "message:send":
		return methods["SendMessage"]
	case httpMethod == "POST" && last == "message:stream":
		return methods["SendStreamingMessage"]
	case parent == "tasks" && strings.HasSuffix(last, ":cancel"):
		return methods["CancelTask"]
	case parent == "tasks" && strings.HasSuffix(last, ":subscribe"):
		return methods["SubscribeToTask"]
	case httpMethod == "GET" && last == "tasks":
		return methods["ListTasks"]
	case httpMethod == "GET" && parent == "tasks" && !strings.Contains(last, ":"):
		return methods["GetTask"]
	case strings.Contains(path, "/pushNotificationConfigs"):
		return op{name: "TaskPushNotificationConfig", class: ClassTask}
	case httpMethod == "GET" && (last == "extendedAgentCard" || last == "card"):
		return methods["GetExtendedAgentCard"]
	}
	return op{name: httpMethod + " " + path, class: ClassOther}
}
