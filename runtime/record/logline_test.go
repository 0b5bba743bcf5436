package record

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/meter"
	"github.com/pistra/pistra/runtime/plan"
)

// lineRecords are request records with every optional field on or off, and
// strings JSON must escape.
func lineRecords() []Record {
	c := &plan.Candidate{Model: "gpt-4o-mini"}
	return []Record{
		{ID: "req_1", Route: "chat_completions", Model: "fast", Profile: "metered", Status: 200, Served: c,
			Provider: "fake-openai", Endpoint: "10.0.0.7:8000", Attempts: 2, Origin: "native", UpstreamRequestID: "up_1",
			Usage:     meter.Usage{InputTokens: 10, CachedInputTokens: 4, CacheCreationInputTokens: 2, OutputTokens: 3, ReasoningTokens: 1},
			UsageFrom: meter.SourceTranslator},
		{ID: "req_2", Route: "messages", Status: 401, Code: dialect.CodeInvalidAPIKey},
		{ID: "req_3", Route: "messages", Model: "a\"b\\c\n\r\t\x01\x7f<&>\u2028\u2029\xff\xfeé€😀\ufffd", OnBehalfOf: "k-2",
			Status: StatusClientClosed, Lost: plan.CapSet(1<<plan.CapStrictTools | 1<<(plan.CapStrictTools+1)),
			Err: errors.New("upstream: \"broke\"\n"), Cut: true, Served: c, UpstreamRequestID: strings.Repeat("u", 200)},
		{ID: "req_4", Route: "chat_completions", Model: strings.Repeat("m", 300), Status: 502, Err: errors.New("cut"), Cut: true},
	}
}

var timeField = regexp.MustCompile(`^\{"time":"([^"]+)",`)

// TestLogRequestIsSlogsLine: the request line LogRequest writes is, byte
// for byte but for the time, the line slog's own JSON handler writes for
// the record's attributes, at the record's level.
func TestLogRequestIsSlogsLine(t *testing.T) {
	for i, r := range lineRecords() {
		for _, d := range []time.Duration{0, 1500 * time.Microsecond, 1234567891 * time.Nanosecond, 3 * time.Hour} {
			var fast, want bytes.Buffer
			NewJSONHandler(&fast, slog.LevelInfo).LogRequest(r.Level(), &r, d)
			slog.New(slog.NewJSONHandler(&want, nil)).LogAttrs(context.Background(), r.Level(), "request", r.Attrs(nil, d)...)
			got := fast.String()
			m := timeField.FindStringSubmatch(got)
			if m == nil {
				t.Fatalf("record %d: no time field first: %s", i, got)
			}
			if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
				t.Errorf("record %d: time %q: %v", i, m[1], err)
			}
			if g, w := timeField.ReplaceAllString(got, ""), timeField.ReplaceAllString(want.String(), ""); g != w {
				t.Errorf("record %d, %v:\n got %s\nwant %s", i, d, g, w)
			}
		}
	}
}

func TestLogRequestLevel(t *testing.T) {
	var out bytes.Buffer
	h := NewJSONHandler(&out, slog.LevelWarn)
	r := lineRecords()[0]
	h.LogRequest(r.Level(), &r, 0)
	if out.Len() != 0 {
		t.Fatalf("an info line below the handler's level was written: %s", out.String())
	}
	r = lineRecords()[3]
	h.LogRequest(r.Level(), &r, 0)
	if !strings.Contains(out.String(), `"level":"WARN","msg":"request","request_id":"req_4"`) {
		t.Fatalf("warning line: %s", out.String())
	}
	slog.New(h).Warn("other", "k", "v")
	if lines := strings.Count(out.String(), "\n"); lines != 2 {
		t.Fatalf("%d lines, want the request line and slog's own: %s", lines, out.String())
	}
}

// BenchmarkRequestLine is one request's log line: slog's JSON handler
// given the record's attributes, against LogRequest.
func BenchmarkRequestLine(b *testing.B) {
	r := lineRecords()[0]
	d := 1500 * time.Microsecond
	b.Run("slog", func(b *testing.B) {
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			var attrs [24]slog.Attr
			log.LogAttrs(context.Background(), r.Level(), "request", r.Attrs(attrs[:0], d)...)
		}
	})
	b.Run("record", func(b *testing.B) {
		h := NewJSONHandler(io.Discard, slog.LevelInfo)
		b.ReportAllocs()
		for b.Loop() {
			h.LogRequest(r.Level(), &r, d)
		}
	})
}

// The request line's duration_ms is written without a float; it must read
// as the float slog's handler would write.
func TestAppendMillisIsShortestFloat(t *testing.T) {
	check := func(us int64) {
		t.Helper()
		want := strconv.AppendFloat(nil, float64(us)/1000, 'f', -1, 64)
		if got := appendMillis(nil, us); string(got) != string(want) {
			t.Fatalf("appendMillis(%d) = %s, want %s", us, got, want)
		}
	}
	for us := int64(-2100); us <= 2100; us++ {
		check(us)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(r.Int64N(1 << 50))
	}
	check(1 << 52)
}
