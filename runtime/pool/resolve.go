package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
)

// resolvConf is where the system's resolvers are read from when no DNS
// server is configured.
const resolvConf = "/etc/resolv.conf"

// queryTimeout bounds one query to one server.
const queryTimeout = 2 * time.Second

// resolver asks DNS itself, rather than through the system's stub, because
// the records' TTL says when to ask again.
type resolver struct {
	// server is the one DNS server asked ("host:port"); empty reads the
	// system's resolvers (and search list) from resolvConf on every
	// resolution, so an edit of the file is followed.
	server string
}

// answer is one resolution: the addresses of every A and AAAA record
// found, and how long it may be kept (the smallest TTL of the records, or
// of the negative answer when there are none).
type answer struct {
	addrs []netip.Addr
	ttl   time.Duration
}

// resolve looks host up. A name that does not exist (NXDOMAIN) or has no
// address is an answer with no addresses, not an error: DNS said so. An
// error is DNS not answering (a timeout, SERVFAIL, a refusal, a network
// error), and then nothing is known of the members.
func (r resolver) resolve(ctx context.Context, host string) (answer, error) {
	servers, names, err := r.config(host)
	if err != nil {
		return answer{}, err
	}
	var last answer
	for _, name := range names {
		a, err := lookup(ctx, servers, name)
		if err != nil {
			return answer{}, fmt.Errorf("resolve %s: %w", name, err)
		}
		if len(a.addrs) > 0 {
			return a, nil
		}
		last = a // as a system resolver does, an empty name moves on to the next of the search list
	}
	return last, nil
}

// config is the servers to ask and the names to ask them, in order.
func (r resolver) config(host string) (servers, names []string, err error) {
	if r.server != "" {
		return []string{r.server}, []string{dns.Fqdn(host)}, nil
	}
	conf, err := dns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil, nil, fmt.Errorf("read the system's resolvers: %w", err)
	}
	if len(conf.Servers) == 0 {
		return nil, nil, fmt.Errorf("%s names no nameserver", resolvConf)
	}
	for _, s := range conf.Servers {
		servers = append(servers, net.JoinHostPort(s, conf.Port))
	}
	return servers, conf.NameList(host), nil
}

// lookup asks for name's A and AAAA records; both must be answered.
func lookup(ctx context.Context, servers []string, name string) (answer, error) {
	a := answer{ttl: -1}
	for _, qtype := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
		m, err := exchange(ctx, servers, name, qtype)
		if err != nil {
			return answer{}, err
		}
		a.merge(m, qtype)
	}
	if a.ttl < 0 {
		a.ttl = 0
	}
	return a, nil
}

// merge adds m's records of type qtype (a resolver's CNAME chain ends in
// them) and lowers the TTL to theirs, or to the negative answer's.
func (a *answer) merge(m *dns.Msg, qtype uint16) {
	found := false
	for _, rr := range m.Answer {
		var ip net.IP
		switch rr := rr.(type) {
		case *dns.A:
			ip = rr.A
		case *dns.AAAA:
			ip = rr.AAAA
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok || rr.Header().Rrtype != qtype {
			continue
		}
		found = true
		a.addrs = append(a.addrs, addr.Unmap())
		a.lower(rr.Header().Ttl)
	}
	if found {
		return
	}
	// A negative answer is kept for the SOA's minimum (RFC 2308).
	for _, rr := range m.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			a.lower(min(soa.Hdr.Ttl, soa.Minttl))
		}
	}
}

func (a *answer) lower(ttl uint32) {
	d := time.Duration(ttl) * time.Second
	if a.ttl < 0 || d < a.ttl {
		a.ttl = d
	}
}

// errNoAnswer is a server answering with neither records nor NXDOMAIN.
var errNoAnswer = errors.New("no answer")

// exchange asks each server in turn until one answers; a truncated UDP
// answer is asked again over TCP.
func exchange(ctx context.Context, servers []string, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg).SetQuestion(name, qtype)
	q.SetEdns0(4096, false)
	var err error
	for _, server := range servers {
		var m *dns.Msg
		if m, err = ask(ctx, "udp", q, server); err == nil && m.Truncated {
			m, err = ask(ctx, "tcp", q, server)
		}
		if err != nil {
			continue
		}
		if m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError {
			return m, nil
		}
		err = fmt.Errorf("%w: %s from %s", errNoAnswer, dns.RcodeToString[m.Rcode], server)
	}
	return nil, err
}

// ask sends q to server over network. The exchange ends when ctx does,
// not only at the query's timeout, so a stopped watcher is not held by a
// server that does not answer.
func ask(ctx context.Context, network string, q *dns.Msg, server string) (*dns.Msg, error) {
	c := &dns.Client{Net: network, Timeout: queryTimeout}
	conn, err := c.DialContext(ctx, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	m, _, err := c.ExchangeWithConnContext(ctx, q, conn)
	return m, err
}

// parseAddrPort reads an endpoint as the picker names it (ip:port, an
// IPv6 address in brackets) in the form members are kept in, so one
// address has one spelling.
func parseAddrPort(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// sortedMembers is addrs with port, deduplicated and sorted.
func sortedMembers(addrs []netip.Addr, port uint16) []netip.AddrPort {
	out := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.AddrPortFrom(a, port))
	}
	slices.SortFunc(out, netip.AddrPort.Compare)
	return slices.Compact(out)
}
