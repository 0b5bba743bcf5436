package fakepicker

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The protocol's names, spelt here apart from the client's so a test
// cannot pass on a name both sides got wrong.
const (
	lbNamespace     = "envoy.lb"
	destinationKey  = "x-gateway-destination-endpoint"
	servedKey       = "x-gateway-destination-endpoint-served"
	subsetNamespace = "envoy.lb.subset_hint"
	subsetKey       = "x-gateway-destination-endpoint-subset"
)

// replayChunk is the most body one replayed chunk carries, the full
// picker's figure.
const replayChunk = 62000

type processor struct {
	extprocv3.UnimplementedExternalProcessorServer
	p *Picker
}

// stream is one Process call's state.
type stream struct {
	p        *Picker
	srv      extprocv3.ExternalProcessor_ProcessServer
	rec      *Request
	answered bool // something was sent
	reply    Reply
}

// errHang stops answering a stream that the script said to hang;
// errAnswered ends one the picker answered itself.
var errHang, errAnswered = errors.New("hang"), errors.New("answered")

func (x *processor) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	s := &stream{p: x.p, srv: srv, rec: x.p.open()}
	first, hanging := true, false
	for {
		req, err := srv.Recv()
		if errors.Is(err, io.EOF) && s.reply.Linger {
			<-srv.Context().Done()
		}
		if err != nil {
			s.p.update(func() { s.rec.Ended, s.rec.Closed = true, errors.Is(err, io.EOF) })
			return nil
		}
		s.p.update(func() { s.note(req, first) })
		first = false
		if hanging {
			continue
		}
		switch err := s.handle(req); {
		case errors.Is(err, errHang):
			hanging = true
		case err != nil:
			s.p.update(func() { s.rec.Ended = true })
			if errors.Is(err, errAnswered) {
				return nil
			}
			return err
		}
	}
}

// note records what a message carries besides its headers and body.
func (s *stream) note(req *extprocv3.ProcessingRequest, first bool) {
	if c := req.GetProtocolConfig(); c != nil {
		if first {
			s.rec.Config = c
		} else {
			s.rec.LateConfig = true
		}
	}
	md := req.GetMetadataContext().GetFilterMetadata()
	if v, ok := md[subsetNamespace].GetFields()[subsetKey]; ok {
		s.rec.Subset, s.rec.SubsetKind = subsetOf(v)
	}
	if v := md[lbNamespace].GetFields()[servedKey].GetStringValue(); v != "" {
		s.rec.Served = v
	}
	switch m := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		for _, h := range m.RequestHeaders.GetHeaders().GetHeaders() {
			s.rec.Header[h.GetKey()] = append(s.rec.Header[h.GetKey()], headerText(h))
		}
	case *extprocv3.ProcessingRequest_RequestBody:
		s.rec.Body = append(s.rec.Body, m.RequestBody.GetBody()...)
		s.rec.BodyChunks++
		s.rec.BodyBeforeAnswer = s.rec.BodyBeforeAnswer || !s.answered
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		for _, h := range m.ResponseHeaders.GetHeaders().GetHeaders() {
			if h.GetKey() == ":status" {
				s.rec.Status = headerText(h)
			}
		}
	case *extprocv3.ProcessingRequest_ResponseBody:
		s.rec.ResponseEnd = s.rec.ResponseEnd || m.ResponseBody.GetEndOfStream()
	}
}

func headerText(h *corev3.HeaderValue) string {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return string(raw)
	}
	return h.GetValue()
}

// subsetOf reads a hint sent as a list, or as a comma-separated string.
func subsetOf(v *structpb.Value) ([]string, string) {
	if l := v.GetListValue(); l != nil {
		out := []string{}
		for _, e := range l.GetValues() {
			out = append(out, e.GetStringValue())
		}
		return out, "list"
	}
	return strings.Split(v.GetStringValue(), ","), "string"
}

// handle answers one message: the pick once the request is whole, and
// plain answers to the response phase.
func (s *stream) handle(req *extprocv3.ProcessingRequest) error {
	switch m := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		if m.RequestHeaders.GetEndOfStream() {
			return s.decide()
		}
	case *extprocv3.ProcessingRequest_RequestBody:
		return s.body(m.RequestBody.GetEndOfStream())
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		if s.reply.Evict {
			return s.immediate(429, "request evicted by flow control")
		}
		return s.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{
			ResponseHeaders: &extprocv3.HeadersResponse{}}})
	case *extprocv3.ProcessingRequest_ResponseBody:
		return s.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{
			ResponseBody: &extprocv3.BodyResponse{}}})
	}
	return nil
}

// body handles a request body chunk. The script decides at the last one;
// until then the full picker stays silent, while the light one answers
// each chunk at once (the last after its header answer).
func (s *stream) body(last bool) error {
	if last {
		if err := s.decide(); err != nil {
			return err
		}
	}
	if s.p.light {
		return s.send(emptyBody())
	}
	return nil
}

func emptyBody() *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
		RequestBody: &extprocv3.BodyResponse{}}}
}

func (s *stream) send(m *extprocv3.ProcessingResponse) error {
	s.answered = true
	return s.srv.Send(m)
}

// decide asks the script and answers the request phase.
func (s *stream) decide() error {
	s.p.mu.Lock()
	seen := s.rec.clone()
	s.p.mu.Unlock()
	r := (*s.p.script.Load())(seen)
	s.reply = r
	switch {
	case r.Err != nil:
		return r.Err
	case r.Hang:
		return errHang
	case r.Status != 0:
		return s.immediate(r.Status, r.Text)
	}
	body := seen.Body
	switch {
	case r.Body != nil:
		body = r.Body
	case r.Model != "" && !s.p.light:
		var err error
		if body, err = rewrite(body, r.Model); err != nil {
			return s.immediate(400, "inference error: BadRequest - "+err.Error())
		}
	}
	if err := s.send(pickAnswer(r, len(body), seen.BodyChunks > 0)); err != nil || s.p.light {
		return err
	}
	return s.replay(body)
}

// immediate answers the request with a status and ends the stream.
func (s *stream) immediate(status int, text string) error {
	err := s.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status: &typev3.HttpStatus{Code: typev3.StatusCode(status)}, Body: []byte(text)}}})
	if err != nil {
		return err
	}
	return errAnswered
}

// pickAnswer is the header answer naming the pick, with the new body's
// length when there is a body, and the route cache cleared as the
// reference pickers do.
func pickAnswer(r Reply, bodyLen int, hasBody bool) *extprocv3.ProcessingResponse {
	var set []*corev3.HeaderValueOption
	if r.Header != "" {
		set = append(set, header(destinationKey, r.Header))
	}
	if hasBody {
		set = append(set, header("content-length", strconv.Itoa(bodyLen)))
	}
	resp := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
		RequestHeaders: &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{
			ClearRouteCache: true, HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: set}}}}}
	if r.Metadata != "" {
		resp.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{
			lbNamespace: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
				destinationKey: structpb.NewStringValue(r.Metadata)}})}}
	}
	return resp
}

func header(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}

// replay sends the body back as streamed chunks, the last marked.
func (s *stream) replay(body []byte) error {
	for off := 0; off < len(body); off += replayChunk {
		end := min(off+replayChunk, len(body))
		err := s.send(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
			RequestBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{
				BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{Body: body[off:end], EndOfStream: end == len(body)}}}}}}})
		if err != nil {
			return err
		}
	}
	return nil
}

// rewrite sets the body's model by decoding it into a map and encoding
// it again, as the full picker does.
func rewrite(body []byte, model string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	m["model"] = model
	return json.Marshal(m)
}
