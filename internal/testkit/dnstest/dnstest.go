// Package dnstest is a real DNS server for tests: it answers A and AAAA
// queries for the names a test sets, over UDP and TCP on one loopback
// port, and its answers can change while the test runs (members added and
// removed, a name failing), as a cluster's DNS does.
package dnstest

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Server answers for the names set on it; every other name is NXDOMAIN.
type Server struct {
	addr string
	udp  *dns.Server
	tcp  *dns.Server

	mu      sync.Mutex
	names   map[string]*entry
	queries map[string]int
}

type entry struct {
	ttl   uint32
	addrs []netip.Addr
	// rcode, when not success, is answered instead of the records; silent
	// answers nothing at all, so the client times out.
	rcode  int
	silent bool
}

// Start serves on 127.0.0.1 (an ephemeral port, UDP and TCP) until the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{names: map[string]*entry{}, queries: map[string]int{}}
	pc, ln := listen(t)
	s.addr = pc.LocalAddr().String()
	s.udp = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	s.tcp = &dns.Server{Listener: ln, Handler: dns.HandlerFunc(s.serve)}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		<-started
	}
	t.Cleanup(func() {
		_ = s.udp.Shutdown()
		_ = s.tcp.Shutdown()
	})
	return s
}

// listen binds UDP on an ephemeral loopback port and TCP on the same one,
// trying a few ports should the TCP one be taken.
func listen(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	var last error
	for range 10 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close()
		last = err
	}
	t.Fatalf("no loopback port free for both UDP and TCP: %v", last)
	return nil, nil
}

// Addr is the server's host:port, for a resolver option.
func (s *Server) Addr() string { return s.addr }

// Set makes name resolve to addrs (IPv4 answer A queries, IPv6 AAAA
// queries) with ttl, rounded down to whole seconds as DNS carries it;
// no addrs is a name that exists with no address (an empty answer).
func (s *Server) Set(t testing.TB, name string, ttl time.Duration, addrs ...string) {
	t.Helper()
	e := &entry{ttl: uint32(ttl / time.Second)}
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			t.Fatalf("dnstest: %v", err)
		}
		e.addrs = append(e.addrs, ip)
	}
	s.put(name, e)
}

// Fail makes queries for name answer rcode (dns.RcodeServerFailure, ...)
// until the next Set.
func (s *Server) Fail(name string, rcode int) { s.put(name, &entry{rcode: rcode}) }

// Silence makes queries for name go unanswered until the next Set.
func (s *Server) Silence(name string) { s.put(name, &entry{silent: true}) }

// Remove makes name NXDOMAIN.
func (s *Server) Remove(name string) { s.put(name, &entry{rcode: dns.RcodeNameError}) }

func (s *Server) put(name string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names[key(name)] = e
}

// Queries is how many queries (of any type) have asked for name.
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[key(name)]
}

func key(name string) string { return strings.ToLower(dns.Fqdn(name)) }

func (s *Server) serve(w dns.ResponseWriter, r *dns.Msg) {
	if len(r.Question) != 1 {
		_ = w.WriteMsg(new(dns.Msg).SetRcode(r, dns.RcodeFormatError))
		return
	}
	q := r.Question[0]
	s.mu.Lock()
	s.queries[key(q.Name)]++
	e := s.names[key(q.Name)]
	s.mu.Unlock()
	if e != nil && e.silent {
		return
	}
	m := new(dns.Msg).SetReply(r)
	m.Authoritative = true
	switch {
	case e == nil:
		m.Rcode = dns.RcodeNameError
	case e.rcode != dns.RcodeSuccess:
		m.Rcode = e.rcode
	default:
		m.Answer = answer(q, e)
	}
	if w.LocalAddr().Network() == "udp" {
		// As a real server does: what does not fit the client's UDP size
		// is cut and flagged, and the client asks again over TCP.
		size := dns.MinMsgSize
		if opt := r.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

func answer(q dns.Question, e *entry) []dns.RR {
	var out []dns.RR
	hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: e.ttl}
	for _, ip := range e.addrs {
		switch {
		case q.Qtype == dns.TypeA && ip.Is4():
			out = append(out, &dns.A{Hdr: hdr, A: ip.AsSlice()})
		case q.Qtype == dns.TypeAAAA && ip.Is6():
			out = append(out, &dns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()})
		}
	}
	return out
}
