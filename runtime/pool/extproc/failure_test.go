package extproc_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/pool/extproc"
)

// TestDialOptions: what Dial cannot use is an error at once.
func TestDialOptions(t *testing.T) {
	for name, o := range map[string]extproc.Options{
		"CA and plaintext": {CAFile: "ca.pem", Plaintext: true},
		"missing CA file":  {CAFile: t.TempDir() + "/none.pem"},
		"CA without PEM":   {CAFile: "helpers_test.go"},
	} {
		if _, err := extproc.Dial("127.0.0.1:9002", o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestImmediateAnswers: a picker answering the request itself (429 when
// it sheds it, 503 when no endpoint can take it) is an ImmediateError
// with its status and text, and the stream is over.
func TestImmediateAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		text   string
	}{{429, "request dropped"}, {503, "no endpoints"}, {400, "inference error: BadRequest"}} {
		p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
			return fakepicker.Immediate(tc.status, tc.text)
		}})
		_, err := c.Pick(t.Context(), query(1000))
		var ie *extproc.ImmediateError
		if !errors.As(err, &ie) {
			t.Fatalf("err = %v, want an ImmediateError", err)
		}
		equal(t, "status", ie.Status, tc.status)
		equal(t, "text", string(ie.Body), tc.text)
		if errors.Is(err, extproc.ErrTimeout) || errors.Is(err, extproc.ErrProtocol) {
			t.Errorf("%v is also a timeout or a protocol error", err)
		}
		p.WaitEnded(t, 1)
	}
}

// TestHangBoundedByTimeout: a picker that never answers fails the pick
// with ErrTimeout once the query's timeout has passed, and the stream is
// cut (the picker sees it end without the client closing it).
func TestHangBoundedByTimeout(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		return fakepicker.Reply{Hang: true}
	}})
	q := query(200 << 10)
	q.Timeout = 150 * time.Millisecond
	var err error
	took := within(t, 2*time.Second, func() { _, err = c.Pick(t.Context(), q) })
	if !errors.Is(err, extproc.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if took < q.Timeout {
		t.Errorf("gave up after %s, before the timeout %s", took, q.Timeout)
	}
	got := p.WaitEnded(t, 1)[0]
	equal(t, "closed by the client", got.Closed, false)
	equal(t, "body read before the hang", len(got.Body), len(q.Body))
}

// TestGRPCError: a picker ending the stream with a gRPC error fails the
// pick with that error's code.
func TestGRPCError(t *testing.T) {
	_, c := startPlain(t, fakepicker.Options{Script: func(fakepicker.Request) fakepicker.Reply {
		return fakepicker.Reply{Err: status.Error(codes.ResourceExhausted, "body too large")}
	}})
	_, err := c.Pick(t.Context(), query(0))
	equal(t, "code", status.Code(err), codes.ResourceExhausted)
	var ie *extproc.ImmediateError
	if errors.As(err, &ie) {
		t.Errorf("a gRPC error taken for the picker's answer: %v", err)
	}
}

// TestPickerDown: nothing listening, or a picker that went away after
// serving, fails the pick at once, not after the timeout.
func TestPickerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := dial(t, addr, extproc.Options{Plaintext: true})
	q := query(0)
	within(t, 2*time.Second, func() { _, err = c.Pick(t.Context(), q) })
	equal(t, "code, nothing listening", status.Code(err), codes.Unavailable)

	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	pick(t, c, q).Done()
	p.Stop()
	within(t, 2*time.Second, func() { _, err = c.Pick(t.Context(), q) })
	if err == nil || errors.Is(err, extproc.ErrTimeout) {
		t.Fatalf("err = %v after the picker stopped, want a failure at once", err)
	}
}

// TestCancelledContext: a request whose context ends fails its pick with
// the context's error, not as a timeout.
func TestCancelledContext(t *testing.T) {
	p, c := startPlain(t, fakepicker.Options{Script: fakepicker.RoundRobin("127.0.0.2:8000")})
	pick(t, c, query(0)).Done() // the connection is up before counting
	p.SetScript(func(fakepicker.Request) fakepicker.Reply { return fakepicker.Reply{Hang: true} })
	check := goroutines(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Pick(ctx, query(0))
	equal(t, "code", status.Code(err), codes.Canceled)
	if errors.Is(err, extproc.ErrTimeout) {
		t.Errorf("a cancelled request reported as a timeout: %v", err)
	}
	p.WaitEnded(t, 2)
	check()
}
