package h1

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// A Cut ends one request early, from any goroutine: its timeout, or the
// client it is made for leaving (Follow). Do watches a Cut rather than
// the request's context. A context per request costs several allocations
// and a registration with its parent, and watching it (context.AfterFunc)
// as many again; a Cut lives inside the caller's own per-request state and
// costs nothing until it follows a context. The zero value is ready; a
// Cut serves one request.
type Cut struct {
	mu    sync.Mutex
	cause error
	// abort wakes the request's I/O at once, told the cause: its
	// connection's, its dial's, or a context's CancelCauseFunc. nil while
	// nothing is watched.
	abort func(cause error)
	// unfollow stops Follow's watch of a context.
	unfollow func() bool
}

// Fire ends the request with cause (the first cause given stays; nil
// reads as context.Canceled, as with a CancelCauseFunc), waking any I/O
// it is blocked in.
func (c *Cut) Fire(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	c.mu.Lock()
	if c.cause != nil {
		c.mu.Unlock()
		return
	}
	c.cause = cause
	abort := c.abort
	c.mu.Unlock()
	if abort != nil {
		abort(cause)
	}
}

// Cause is what the cut was fired with, nil while it has not fired.
func (c *Cut) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Watch has abort run with the cause when the cut fires, at once if it
// has already. It reports whether the cut had not fired.
func (c *Cut) Watch(abort func(cause error)) bool {
	c.mu.Lock()
	if cause := c.cause; cause != nil {
		c.mu.Unlock()
		abort(cause)
		return false
	}
	c.abort = abort
	c.mu.Unlock()
	return true
}

// Unwatch forgets the watched abort. It reports false when the cut fired
// while it was watched: the abort ran, or is running.
func (c *Cut) Unwatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.abort = nil
	return c.cause == nil
}

// err prefers the cut's cause when it ended the request, so callers see
// why (a timeout, the client leaving) rather than an I/O error.
func (c *Cut) err(err error) error {
	if cause := c.Cause(); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return err
}

// Follow fires the cut with ctx's cause when ctx ends, until Stop.
func (c *Cut) Follow(ctx context.Context) {
	unfollow := context.AfterFunc(ctx, func() { c.Fire(context.Cause(ctx)) })
	c.mu.Lock()
	c.unfollow = unfollow
	c.mu.Unlock()
	if ctx.Err() != nil {
		c.Fire(context.Cause(ctx)) // ended already: fail before dialling, not when the AfterFunc gets to it
	}
}

// Stop ends what the cut serves: it stops following a context, and fires
// (context.Canceled, unless it fired already) so whatever still watches
// lets go.
func (c *Cut) Stop() {
	c.unfollowContext()
	c.Fire(context.Canceled)
}

// unfollowContext stops Follow's watch, firing nothing.
func (c *Cut) unfollowContext() {
	c.mu.Lock()
	unfollow := c.unfollow
	c.unfollow = nil
	c.mu.Unlock()
	if unfollow != nil {
		unfollow()
	}
}
