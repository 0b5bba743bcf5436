package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/pistra/pistra/runtime/server"
	"github.com/pistra/pistra/runtime/tracing"
)

// tracingFlushWait bounds the export of the spans still queued at exit.
const tracingFlushWait = 5 * time.Second

// setupTracing turns tracing on when the OTEL_* environment asks for it
// and returns what flushes its last spans at exit.
func setupTracing(o *server.Options, log *slog.Logger) (stop func(), err error) {
	how, err := tracing.Configured(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	t, shutdown, err := tracing.Setup(context.Background())
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	o.Tracer = t
	if t != nil {
		log.Info("tracing on", "otlp_protocol", string(how))
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushWait)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: spans not exported at exit", "error", err)
		}
	}, nil
}
