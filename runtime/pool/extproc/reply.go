package extproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pistra/pistra/runtime/dialect"
)

// ImmediateError is the picker answering the request itself instead of
// naming an endpoint: 429 when it sheds the request, 503 when no endpoint
// (of the subset, if one was hinted) can take it, others for what the
// picker found wrong with the request.
type ImmediateError struct {
	// Status is the HTTP status the picker gave, 0 when it gave none.
	Status int
	// Body is the picker's text, as it sent it.
	Body []byte
}

func (e *ImmediateError) Error() string {
	return fmt.Sprintf("picker answered %d: %q", e.Status, clip(string(e.Body)))
}

// reading is the request phase's replies as they arrive: the header
// answer (whose pick the protocol also allows in the dynamic metadata of
// any reply) and the body answers, which come either as one streamed
// replacement ending with its end-of-stream mark, or, from a picker that
// keeps the body, as one empty answer per chunk sent
// (docs/picker.md#the-request-phase).
type reading struct {
	chunks           int // body chunks sent; 0 for a request without body
	limit            int // the most replacement body taken
	headers          bool
	header, meta     string // the pick as the header and the metadata name it
	body             []byte
	replaced, bodyOK bool
	empties          int
}

func (r *reading) complete() bool { return r.headers && (r.chunks == 0 || r.bodyOK) }

// take reads one reply; an ImmediateError or a reply out of place is an
// error that ends the pick.
func (r *reading) take(resp *extprocv3.ProcessingResponse) error {
	if v := destination(resp.GetDynamicMetadata()); v != "" {
		r.meta = v
	}
	switch m := resp.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		ir := m.ImmediateResponse
		return &ImmediateError{Status: int(ir.GetStatus().GetCode()), Body: ir.GetBody()}
	case *extprocv3.ProcessingResponse_RequestHeaders:
		r.headers = true
		if v := headerValue(m.RequestHeaders.GetResponse().GetHeaderMutation(), keyDestination); v != "" {
			r.header = v
		}
		return nil
	case *extprocv3.ProcessingResponse_RequestBody:
		return r.takeBody(m.RequestBody.GetResponse().GetBodyMutation())
	default:
		return fmt.Errorf("%w: a %T reply before the pick", ErrProtocol, m)
	}
}

func (r *reading) takeBody(bm *extprocv3.BodyMutation) error {
	switch m := bm.GetMutation().(type) {
	case nil:
		if !r.replaced {
			r.empties++
			r.bodyOK = r.empties >= r.chunks
		}
	case *extprocv3.BodyMutation_StreamedResponse:
		part := m.StreamedResponse.GetBody()
		if len(r.body)+len(part) > r.limit {
			return fmt.Errorf("%w: a replacement body over %d bytes", ErrProtocol, r.limit)
		}
		r.replaced = true
		r.body = append(r.body, part...)
		r.bodyOK = m.StreamedResponse.GetEndOfStream()
	default:
		return fmt.Errorf("%w: a body mutation other than a streamed one (%T)", ErrProtocol, m)
	}
	return nil
}

// named is the pick: the list the header or the metadata names, which
// must agree when both do (docs/picker.md#the-pick).
func (r *reading) named() ([]string, error) {
	h, m := endpointList(r.header), endpointList(r.meta)
	switch {
	case len(h) == 0 && len(m) == 0:
		return nil, fmt.Errorf("%w: no endpoint named", ErrProtocol)
	case len(h) == 0:
		return m, nil
	case len(m) != 0 && !slices.Equal(h, m):
		return nil, fmt.Errorf("%w: the header names %q, the metadata %q", ErrProtocol, clip(r.header), clip(r.meta))
	}
	return h, nil
}

// endpointList splits a comma list of endpoints, in order. An entry that
// parses as an address is written canonically (so "[0:0::1]:80" is the
// member "[::1]:80"); one that does not is kept as written.
func endpointList(v string) []string {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if ap, err := netip.ParseAddrPort(part); err == nil {
			part = ap.String()
		}
		out = append(out, part)
	}
	return out
}

func destination(dm *structpb.Struct) string {
	return dm.GetFields()[nsDestination].GetStructValue().GetFields()[keyDestination].GetStringValue()
}

func headerValue(hm *extprocv3.HeaderMutation, key string) string {
	for _, o := range hm.GetSetHeaders() {
		if h := o.GetHeader(); strings.EqualFold(h.GetKey(), key) {
			if raw := h.GetRawValue(); len(raw) > 0 {
				return string(raw)
			}
			return h.GetValue()
		}
	}
	return ""
}

// replacementLimit bounds a replacement body: a re-marshal may escape
// each byte as \u00XX, six times its size, and no more is a rewrite
// (docs/picker.md#the-body-answer).
func replacementLimit(n int) int { return 6*n + chunkSize }

// replacedModel reads the model a replacement body names, "" when it is
// the original's.
func replacedModel(replacement, original []byte) (string, error) {
	if !json.Valid(replacement) {
		return "", fmt.Errorf("%w: the replacement body is not JSON", ErrProtocol)
	}
	f, err := dialect.FindModel(replacement)
	if err != nil {
		return "", fmt.Errorf("%w: the replacement body: %w", ErrProtocol, err)
	}
	if o, err := dialect.FindModel(original); err == nil && o.Name == f.Name {
		return "", nil
	}
	return f.Name, nil
}

// streamError names a stream that ended before the pick for what it is.
func streamError(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the stream ended before the pick", ErrProtocol)
	}
	return err
}

// clip shortens what a picker wrote for an error message.
func clip(s string) string {
	const most = 200
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}
