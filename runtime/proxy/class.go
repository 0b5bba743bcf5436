package proxy

import (
	"net/http"

	"github.com/pistra/pistra/runtime/plan"
)

// class is why an attempt failed: plan's failure classes, which retry.on
// and failover.on list, and two outcomes policy cannot name. classNone
// means the attempt produced the answer.
type class uint8

const (
	classNone class = iota
	classConnect
	class5xx
	class429
	classTimeout
	// classCanceled: the client went away; nothing more is attempted.
	classCanceled
)

// classNames spells each class; those policy can name are plan's, and
// are also the retry and failover metrics' reason label.
var classNames = [...]string{
	classNone:     "",
	classConnect:  string(plan.FailureConnect),
	class5xx:      string(plan.Failure5xx),
	class429:      string(plan.Failure429),
	classTimeout:  string(plan.FailureTimeout),
	classCanceled: "canceled",
}

func (c class) String() string { return classNames[c] }

// failure is the class as policy names it; "" for classNone and
// classCanceled, which no policy can name.
func (c class) failure() plan.FailureClass {
	if c == classCanceled {
		return ""
	}
	return plan.FailureClass(classNames[c])
}

// classify maps an upstream status to a failure class.
func classify(status int) class {
	switch {
	case status == http.StatusTooManyRequests:
		return class429
	case status >= 500:
		return class5xx
	}
	return classNone
}
