package ledger

import (
	"context"
	"io"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// raftLogger routes raft's log lines into the node's slog logger, so they
// share pistrad's format and destination. The intercepting logger's own
// output is off; every line reaches the sink, which slog filters by level.
func raftLogger(l *slog.Logger) hclog.Logger {
	il := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "raft", Output: io.Discard, Level: hclog.Off})
	il.RegisterSink(slogSink{l})
	return il
}

type slogSink struct{ l *slog.Logger }

func (s slogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	lv := slog.LevelInfo
	switch {
	case level <= hclog.Debug:
		lv = slog.LevelDebug
	case level == hclog.Warn:
		lv = slog.LevelWarn
	case level >= hclog.Error:
		lv = slog.LevelError
	}
	s.l.Log(context.Background(), lv, msg, append(args, "component", name)...)
}
