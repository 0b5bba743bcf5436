// Package extproc is pistra's client of an endpoint picker: a service that
// speaks Envoy's external processing protocol (ext_proc v3 over gRPC) and
// names the pool member a request should go to, as the Gateway API
// Inference Extension's picker does. One Process stream carries one
// request: the pick, then the response phase that keeps the picker's load
// accounting true. What the client relies on of the protocol is written up
// in docs/picker.md.
package extproc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pistra/pistra/runtime/certs"
)

// DefaultTimeout bounds a pick whose Query gives no Timeout.
const DefaultTimeout = 2 * time.Second

// reconnectDelay caps the wait between attempts to reach a picker that is
// down: gRPC's default grows to two minutes, which would keep a restarted
// picker unused (and its pool on its failure mode) long after it is back.
const reconnectDelay = 5 * time.Second

// Errors a pick returns besides the picker's own ImmediateError; each is
// wrapped with the picker's address.
var (
	// ErrTimeout: the picker did not complete its answer within the
	// query's Timeout.
	ErrTimeout = errors.New("picker did not answer in time")
	// ErrProtocol: the picker answered in a way the protocol does not
	// allow (no endpoint named, the header and the metadata disagreeing, a
	// body mutation other than a streamed one, a replacement body without
	// a model).
	ErrProtocol = errors.New("picker broke the protocol")
)

// Options say how to reach a picker.
type Options struct {
	// CAFile is a PEM file of the certificates that may sign the picker's;
	// empty trusts the system's roots. Giving it with Plaintext is an
	// error.
	CAFile string
	// ServerName is the name the picker's certificate must hold; empty
	// checks the host of the address (an IP literal against the
	// certificate's IP addresses).
	ServerName string
	// Plaintext speaks gRPC without TLS, for a picker started without it.
	Plaintext bool
}

// Client is one picker's connection, shared by every request of its pool.
// gRPC connects lazily and reconnects by itself; a picker that is down
// fails each pick at once rather than making it wait for the connection.
type Client struct {
	addr string
	conn *grpc.ClientConn
	proc extprocv3.ExternalProcessorClient
}

// Dial prepares the connection to the picker at addr ("host:port"). It
// fails only on options it cannot use (an unreadable CA file, CAFile with
// Plaintext); a picker that is down shows in each pick.
func Dial(addr string, o Options) (*Client, error) {
	creds, err := transport(o)
	if err != nil {
		return nil, fmt.Errorf("picker %s: %w", addr, err)
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay, bo.MaxDelay = 100*time.Millisecond, reconnectDelay
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: DefaultTimeout}))
	if err != nil {
		return nil, fmt.Errorf("picker %s: %w", addr, err)
	}
	return &Client{addr: addr, conn: conn, proc: extprocv3.NewExternalProcessorClient(conn)}, nil
}

func transport(o Options) (credentials.TransportCredentials, error) {
	if o.Plaintext {
		if o.CAFile != "" {
			return nil, errors.New("a CA file and plaintext exclude each other")
		}
		return insecure.NewCredentials(), nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
	if o.CAFile != "" {
		pool, err := certs.CAPool(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("picker CA: %w", err)
		}
		cfg.RootCAs = pool
	}
	return credentials.NewTLS(cfg), nil
}

// Addr is the picker's address, for log lines and status.
func (c *Client) Addr() string { return c.addr }

// Close ends the connection; streams still open on it end with it.
func (c *Client) Close() error { return c.conn.Close() }

// Query is what one pick sends.
type Query struct {
	// Header is sent as the request's headers, keys lower-cased as Envoy
	// sends them; the caller includes x-request-id and leaves out what the
	// picker must not see (the client's credentials).
	Header http.Header
	// Body is the request body as it would go upstream; the picker reads
	// the model from it.
	Body []byte
	// Subset, when not nil, restricts the pick to these members
	// ("host:port"); sent as the subset hint. An empty non-nil list is
	// sent too, and a picker answers it 503.
	Subset []string
	// Timeout bounds the pick, and each step of the response phase;
	// zero is DefaultTimeout.
	Timeout time.Duration
}

// Pick opens one Process stream and asks the picker where the request
// goes. The stream stays open, tied to ctx, until the answer's Done, so
// the picker counts the request as in flight while it is served; on an
// error it is already closed. An ImmediateError is the picker's refusal
// (429 shed, 503 no endpoint); any other error means the picker is down,
// slow (ErrTimeout) or broke the protocol (ErrProtocol).
func (c *Client) Pick(ctx context.Context, q Query) (*Answer, error) {
	bound := q.Timeout
	if bound <= 0 {
		bound = DefaultTimeout
	}
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(bound, cancel)
	a, err := c.pick(ctx, q, cancel, bound)
	// The timer having fired is the timeout, whatever the stream said
	// after it was cut.
	fired := !timer.Stop()
	if !fired && err == nil {
		return a, nil
	}
	cancel()
	if a != nil {
		<-a.drained
	}
	if fired {
		return nil, fmt.Errorf("picker %s: %w (%s)", c.addr, ErrTimeout, bound)
	}
	return nil, fmt.Errorf("picker %s: %w", c.addr, err)
}

// pick runs the request phase on a stream of ctx: the caller's goroutine
// sends headers and body chunks without waiting, since a picker answers
// the headers only once it has read the whole body, while the answer's
// receiver reads the replies. Its Answer (non-nil once the stream opened,
// even with an error) has a receiver running until the stream ends.
func (c *Client) pick(ctx context.Context, q Query, cancel context.CancelFunc, bound time.Duration) (*Answer, error) {
	stream, err := c.proc.Process(ctx)
	if err != nil {
		return nil, err
	}
	a := &Answer{stream: stream, original: q.Body, cancel: cancel, bound: bound,
		picked: make(chan struct{}), drained: make(chan struct{})}
	go a.receive(chunks(len(q.Body)))
	a.sendRequest(q)
	<-a.picked
	return a, a.err
}
