package pool

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// members is one resolution of a DNS name, kept whole: the request path
// reads it with one atomic load.
type members struct {
	addrs []netip.AddrPort // sorted
	names []string         // addrs[i] spelt host:port, what a pick returns
	// resolved is when DNS last answered for the set (it may have answered
	// the same set again since it changed).
	resolved time.Time
}

func newMembers(addrs []netip.AddrPort, at time.Time) *members {
	m := &members{addrs: addrs, names: make([]string, len(addrs)), resolved: at}
	for i, a := range addrs {
		m.names[i] = a.String()
	}
	return m
}

// has reports whether a is a member, and its spelling.
func (m *members) has(a netip.AddrPort) (string, bool) {
	i, ok := slices.BinarySearchFunc(m.addrs, a, netip.AddrPort.Compare)
	if !ok {
		return "", false
	}
	return m.names[i], true
}

func inSorted(addrs []netip.AddrPort, a netip.AddrPort) bool {
	_, ok := slices.BinarySearchFunc(addrs, a, netip.AddrPort.Compare)
	return ok
}

// user is a member set's name in the metrics: the provider it serves and
// the subset ("" for the pool's own set).
type user struct{ provider, subset string }

// watcher keeps one DNS name's member set, re-resolved on its records' TTL
// within the set's bounds. Pools and subsets that share a name share its
// watcher, and so its round-robin turn.
type watcher struct {
	name string // host:port as the policy wrote it
	host string
	port uint16
	set  *Set

	cur    atomic.Pointer[members]
	cursor atomic.Uint64
	// pending is the users a Load under way gives it (Set.mu).
	pending []user

	mu        sync.Mutex // guards the users and what Status reads below
	users     []user     // whose gauges it publishes
	lastErr   string
	failedAt  time.Time
	interval  time.Duration // until the next resolution, as last decided
	fails     int           // consecutive failed resolutions (the loop's own)
	resolving bool          // false for an address literal: a fixed set
	since     time.Time     // when it was made

	// ctx ends when the watcher is stopped, a resolution under way
	// included; done is closed once its loop has returned.
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
}

// newWatcher watches name (host:port). An IP host is a set of one member
// that is never resolved; a name that does not parse (the compiler lets
// none through) is an empty set saying why.
func newWatcher(s *Set, name string) *watcher {
	w := &watcher{name: name, set: s, since: time.Now(), done: make(chan struct{})}
	w.ctx, w.stop = context.WithCancel(context.Background())
	w.cur.Store(newMembers(nil, time.Time{}))
	host, port, err := net.SplitHostPort(name)
	var p uint64
	if err == nil {
		p, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		w.lastErr = fmt.Sprintf("pool dns %q is not host:port: %v", name, err)
		close(w.done)
		return w
	}
	w.host, w.port = host, uint16(p)
	if ip, err := netip.ParseAddr(host); err == nil {
		w.cur.Store(newMembers([]netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), w.port)}, time.Now()))
		close(w.done)
		return w
	}
	w.resolving = true
	return w
}

// addUser and commitUsers stage the gauges a Load gives the set and make
// them those it publishes. Set.mu is held.
func (w *watcher) addUser(u user) { w.pending = append(w.pending, u) }

func (w *watcher) commitUsers() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users, w.pending = w.pending, nil
}

// start resolves once, so the set is known before requests look for it,
// then keeps it fresh in the background until stopped.
func (w *watcher) start() {
	if !w.resolving {
		return
	}
	next := w.refresh()
	go w.run(next)
}

func (w *watcher) run(next time.Duration) {
	defer close(w.done)
	t := time.NewTimer(next)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
			t.Reset(w.refresh())
		}
	}
}

// close stops the watcher and waits for its loop; the set stays as it was
// for the requests still holding it.
func (w *watcher) close() {
	w.stop()
	<-w.done
}

// refresh resolves the name and says when to do it again: on the answer's
// TTL within the bounds, or after a failure from the minimum up, doubling
// per failure in a row, to the maximum, the last good set kept meanwhile.
func (w *watcher) refresh() time.Duration {
	a, err := w.set.resolver.resolve(w.ctx, w.host)
	now := time.Now()
	switch {
	case w.ctx.Err() != nil:
		return 0 // stopped: the loop is ending
	case err != nil:
		return w.failed(err, now)
	}
	return w.resolved(a, now)
}

func (w *watcher) resolved(a answer, now time.Time) time.Duration {
	next := w.set.clamp(a.ttl)
	old := w.cur.Load()
	addrs := sortedMembers(a.addrs, w.port)
	if old.resolved.IsZero() || !slices.Equal(addrs, old.addrs) { // the first answer is logged too
		w.cur.Store(newMembers(addrs, now))
		w.logChange(old, addrs)
	} else {
		// The same set, confirmed: only its age changes.
		w.cur.Store(&members{addrs: old.addrs, names: old.names, resolved: now})
	}
	w.mu.Lock()
	w.lastErr, w.failedAt, w.interval, w.fails = "", time.Time{}, next, 0
	w.mu.Unlock()
	w.publish(now)
	return next
}

func (w *watcher) failed(err error, now time.Time) time.Duration {
	w.mu.Lock()
	w.fails++
	next := w.set.opts.MinTTL
	for i := 1; i < w.fails && next < w.set.opts.MaxTTL; i++ {
		next *= 2
	}
	next = min(next, w.set.opts.MaxTTL)
	w.lastErr, w.failedAt, w.interval = err.Error(), now, next
	w.mu.Unlock()
	m := w.cur.Load()
	age := w.age(m, now).Round(time.Millisecond).String()
	if m.resolved.IsZero() {
		age += " (never resolved)"
	}
	attrs := []any{"dns", w.name, "error", err, "members", len(m.names), "age", age, "retry_in", next.String()}
	w.set.log.Warn("pool member set not resolved; the last good set is kept", attrs...)
	w.publish(now)
	return next
}

func (w *watcher) logChange(old *members, addrs []netip.AddrPort) {
	var added, removed []string
	for _, a := range addrs {
		if !inSorted(old.addrs, a) {
			added = append(added, a.String())
		}
	}
	for i, a := range old.addrs {
		if !inSorted(addrs, a) {
			removed = append(removed, old.names[i])
		}
	}
	level := slog.LevelInfo
	if len(addrs) == 0 {
		level = slog.LevelWarn // requests to it now answer pool_no_member
	}
	w.set.log.Log(context.Background(), level, "pool members changed", "dns", w.name,
		"members", len(addrs), "added", added, "removed", removed)
}

// publish sets the gauges of every provider (and subset) the set serves.
// It holds the lock, so once a Load has committed the users no publish
// under the old ones follows (and revives a gauge the Load withdrew).
func (w *watcher) publish(now time.Time) {
	m := w.cur.Load()
	age := w.age(m, now)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.users {
		w.set.opts.Metrics.PoolMembers(u.provider, u.subset, len(m.names), age)
	}
}
