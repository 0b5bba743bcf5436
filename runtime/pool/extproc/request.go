package extproc

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The protocol's metadata namespaces and keys (docs/picker.md#names).
const (
	nsDestination  = "envoy.lb"
	keyDestination = "x-gateway-destination-endpoint"
	keyServed      = "x-gateway-destination-endpoint-served"
	nsSubset       = "envoy.lb.subset_hint"
	keySubset      = "x-gateway-destination-endpoint-subset"
)

// chunkSize is the most body one request_body message carries, the size
// the protocol recommends.
const chunkSize = 64 << 10

// chunks is how many request_body messages a body of n bytes takes.
func chunks(n int) int { return (n + chunkSize - 1) / chunkSize }

// sendRequest sends the request phase: the headers, then the body in
// chunks, the last marked as the end of the stream, without waiting for
// any reply. It stops early once the pick has failed, and at a failed
// send: that ends the stream, and the receiver reports why.
func (a *Answer) sendRequest(q Query) {
	if a.stream.Send(requestHeaders(q)) != nil {
		return
	}
	for off := 0; off < len(q.Body) && !a.failed(); off += chunkSize {
		end := min(off+chunkSize, len(q.Body))
		err := a.stream.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
			RequestBody: &extprocv3.HttpBody{Body: q.Body[off:end], EndOfStream: end == len(q.Body)}}})
		if err != nil {
			return
		}
	}
}

// requestHeaders is the stream's first message: the headers (keys
// lower-cased, values as raw bytes), the end of the stream when there is
// no body, the subset hint, and the processing mode this client speaks,
// which a picker reads from the first message only.
func requestHeaders(q Query) *extprocv3.ProcessingRequest {
	hs := make([]*corev3.HeaderValue, 0, len(q.Header))
	for _, k := range slices.Sorted(maps.Keys(q.Header)) {
		for _, v := range q.Header[k] {
			hs = append(hs, &corev3.HeaderValue{Key: strings.ToLower(k), RawValue: []byte(v)})
		}
	}
	return &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: hs}, EndOfStream: len(q.Body) == 0}},
		MetadataContext: subsetHint(q.Subset),
		ProtocolConfig: &extprocv3.ProtocolConfiguration{
			RequestBodyMode:                         filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
			ResponseBodyMode:                        filterv3.ProcessingMode_FULL_DUPLEX_STREAMED,
			SendBodyWithoutWaitingForHeaderResponse: true,
		},
	}
}

// subsetHint is the subset as a list of strings, the encoding every
// picker reads; nil without a subset.
func subsetHint(subset []string) *corev3.Metadata {
	if subset == nil {
		return nil
	}
	vals := make([]*structpb.Value, len(subset))
	for i, m := range subset {
		vals[i] = structpb.NewStringValue(m)
	}
	return metadata(nsSubset, keySubset, structpb.NewListValue(&structpb.ListValue{Values: vals}))
}

// responseHeaders opens the response phase: the status, and the endpoint
// that served in the metadata.
func responseHeaders(endpoint string, status int) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
			Headers: &corev3.HeaderMap{Headers: []*corev3.HeaderValue{
				{Key: ":status", RawValue: []byte(strconv.Itoa(status))}}}}},
		MetadataContext: metadata(nsDestination, keyServed, structpb.NewStringValue(endpoint)),
	}
}

// responseEnd closes the response phase with an empty last body chunk:
// pistra relays the answer itself, so the picker sees its end, not its
// bytes. The served endpoint goes with it, as a picker reads the metadata
// of every message.
func responseEnd(endpoint string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		Request:         &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{EndOfStream: true}},
		MetadataContext: metadata(nsDestination, keyServed, structpb.NewStringValue(endpoint)),
	}
}

func metadata(ns, key string, v *structpb.Value) *corev3.Metadata {
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{
		ns: {Fields: map[string]*structpb.Value{key: v}}}}
}
