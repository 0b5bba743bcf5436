package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pistra/pistra/runtime/version"
)

// Exporter is how spans leave: an OTLP protocol, or none.
type Exporter string

const (
	ExportNone Exporter = ""
	ExportGRPC Exporter = "grpc"
	ExportHTTP Exporter = "http/protobuf"
)

// Configured reads the standard OpenTelemetry environment for whether
// traces are exported and how. Tracing is off unless configured: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or its _TRACES_ variant) or
// OTEL_TRACES_EXPORTER=otlp turns it on; OTEL_TRACES_EXPORTER=none or
// OTEL_SDK_DISABLED=true keeps it off. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf, the specification's default. A value this build
// cannot honour is an error, so a typo does not silently drop traces.
func Configured(getenv func(string) string) (Exporter, error) {
	if getenv("OTEL_SDK_DISABLED") == "true" {
		return ExportNone, nil
	}
	switch e := getenv("OTEL_TRACES_EXPORTER"); e {
	case "none":
		return ExportNone, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return ExportNone, nil
		}
	case "otlp":
	default:
		return ExportNone, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: this build exports otlp or none", e)
	}
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch Exporter(p) {
	case "", ExportHTTP:
		return ExportHTTP, nil
	case ExportGRPC:
		return ExportGRPC, nil
	}
	return ExportNone, fmt.Errorf("OTLP protocol %q: this build speaks grpc or http/protobuf", p)
}

// Setup builds the tracer the process's environment asks for
// (Configured): nil and a no-op shutdown when tracing is off. The exporter reads its endpoint,
// headers, timeout and TLS from the standard OTEL_EXPORTER_OTLP_*
// variables, the SDK its sampler (OTEL_TRACES_SAMPLER[_ARG]) and batching
// (OTEL_BSP_*), the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to pistrad). shutdown
// flushes what is queued, within its context.
func Setup(ctx context.Context) (t *Tracer, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	how, err := Configured(os.Getenv)
	if err != nil || how == ExportNone {
		return nil, noop, err
	}
	var exp sdktrace.SpanExporter
	if how == ExportGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, noop, fmt.Errorf("otlp trace exporter (%s): %w", how, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "pistrad"), attribute.String("service.version", version.String())),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, noop, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return New(tp), tp.Shutdown, nil
}
