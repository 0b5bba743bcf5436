package h1

import (
	"bufio"
	"context"
	"net"
	"time"
)

// newConn readies nc for exchanges with addr. Its reader sits on a
// headLimit, unbounded until a response head is read, and starts parked:
// it takes a buffer when the first answer comes. What an exchange hands to
// others (the abort, the peek) is made here once, not per exchange.
func newConn(nc net.Conn, addr string) *conn {
	cn := &conn{nc: nc, addr: addr, head: headLimit{r: nc, left: -1}, peek: newPeeker(nc)}
	cn.br, cn.parked = new(bufio.Reader), true
	cn.sent.nc = nc
	cn.abort = func(error) { nc.SetDeadline(aLongTimeAgo) }
	return cn
}

// get returns a live idle connection to addr, or dials one: within ctx,
// and cut aborting the dial.
func (c *Client) get(ctx context.Context, cut *Cut, addr string) (cn *conn, reused bool, err error) {
	now := time.Now()
	for {
		c.mu.Lock()
		list := c.idle[addr]
		if len(list) == 0 {
			c.mu.Unlock()
			break
		}
		cn = list[len(list)-1]
		list[len(list)-1] = nil
		c.idle[addr] = list[:len(list)-1]
		c.mu.Unlock()
		if now.Sub(cn.idleSince) < c.idleTimeout && cn.peek.peerOpen() {
			return cn, true, nil
		}
		cn.nc.Close()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !cut.Watch(cancel) {
		return nil, false, cut.Cause()
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	cut.Unwatch()
	if err != nil {
		return nil, false, cut.err(err)
	}
	return newConn(nc, addr), false, nil
}

// put returns a connection whose last response was read whole. It has
// no deadline to clear: the only one ever set is a fired cut's, and a
// connection whose cut fired is closed, not put back.
func (c *Client) put(cn *conn) {
	cn.idleSince = time.Now()
	c.mu.Lock()
	list := c.idle[cn.addr]
	if len(list) >= c.maxIdlePerHost {
		c.mu.Unlock()
		cn.nc.Close()
		return
	}
	c.idle[cn.addr] = append(list, cn)
	if c.idleTimeout != noTimeout {
		c.scheduleReap(cn.idleSince.Add(c.idleTimeout))
	}
	c.mu.Unlock()
}

// The reaper is one timer per client, armed only while the pool holds a
// connection, for the moment the oldest one expires: idle sockets close
// on time without a goroutine per connection, and an empty pool costs
// nothing. Each host's list is in idleSince order (put appends, get takes
// the newest), so the expired ones are at its front.

// scheduleReap arms the reaper for at, unless it already fires sooner.
// c.mu is held.
func (c *Client) scheduleReap(at time.Time) {
	if !c.reapAt.IsZero() && !c.reapAt.After(at) {
		return
	}
	c.reapAt = at
	if c.reaper == nil {
		c.reaper = time.AfterFunc(time.Until(at), c.reap)
		return
	}
	c.reaper.Reset(time.Until(at))
}

// reap closes the connections idle for the idle timeout and arms the
// reaper for the next one to expire.
func (c *Client) reap() {
	now := time.Now()
	var expired []*conn
	c.mu.Lock()
	c.reapAt = time.Time{}
	var next time.Time
	for addr, list := range c.idle {
		n := 0
		for n < len(list) && now.Sub(list[n].idleSince) >= c.idleTimeout {
			n++
		}
		expired = append(expired, list[:n]...)
		kept := copy(list, list[n:])
		clear(list[kept:])
		if kept == 0 {
			delete(c.idle, addr)
			continue
		}
		c.idle[addr] = list[:kept]
		if at := list[0].idleSince.Add(c.idleTimeout); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !next.IsZero() {
		c.scheduleReap(next)
	}
	c.mu.Unlock()
	for _, cn := range expired {
		cn.nc.Close()
	}
}

// CloseIdleConnections closes every pooled connection and stops the
// reaper until a connection is pooled again.
func (c *Client) CloseIdleConnections() {
	c.mu.Lock()
	idle := c.idle
	c.idle = map[string][]*conn{}
	if c.reaper != nil {
		c.reaper.Stop()
	}
	c.reapAt = time.Time{}
	c.mu.Unlock()
	for _, list := range idle {
		closeAll(list)
	}
}

// CloseIdleConnectionsTo closes the pooled connections to the given hosts
// (as a URL writes them: host or host:port), for a caller that no longer
// sends to them. Those in use are closed by the reaper once idle.
func (c *Client) CloseIdleConnectionsTo(hosts []string) {
	var idle [][]*conn
	c.mu.Lock()
	for _, h := range hosts {
		addr := hostPort(h)
		idle = append(idle, c.idle[addr])
		delete(c.idle, addr)
	}
	c.mu.Unlock()
	for _, list := range idle {
		closeAll(list)
	}
}

func closeAll(list []*conn) {
	for _, cn := range list {
		cn.nc.Close()
	}
}
