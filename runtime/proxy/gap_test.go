package proxy

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/upstream"
)

// blockingBody blocks every Read until its context ends.
type blockingBody struct{ ctx context.Context }

func (b blockingBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, errors.New("read interrupted")
}

func (blockingBody) Close() error { return nil }

// timedBody is body under an attempt's watchdog, as send sets it up for
// a provider with a timeout of gap; the attempt's cut cancels ctx, as a
// transport's abort would wake its read. The test's end stops the
// watchdog, as the attempt's finish would.
func timedBody(t *testing.T, cancel context.CancelCauseFunc, body io.ReadCloser, gap time.Duration) *gapTimedBody {
	a := &attempt{up: &upstream.Upstream{Timeout: gap}}
	a.cut.Watch(cancel)
	a.dog.Start(gap, a)
	t.Cleanup(func() { a.dog.Stop() })
	return a.timeBody(body)
}

// TestGapTimedBody: a read that waits a whole gap is cut with errTimeout;
// time spent between reads (a slow client) does not count.
func TestGapTimedBody(t *testing.T) {
	const gap = 20 * time.Millisecond
	t.Run("stalled read is cut", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		b := timedBody(t, cancel, blockingBody{ctx}, gap)
		defer b.Close()
		_, err := b.Read(make([]byte, 8))
		if !errors.Is(err, errTimeout) {
			t.Fatalf("err %v, want errTimeout", err)
		}
	})
	t.Run("pauses between reads do not count", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		b := timedBody(t, cancel, io.NopCloser(strings.NewReader("abcdef")), gap)
		defer b.Close()
		buf := make([]byte, 2)
		for i := 0; i < 3; i++ {
			time.Sleep(3 * gap) // the client is slow, not the upstream
			if _, err := b.Read(buf); err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the context was cancelled: %v", context.Cause(ctx))
		}
	})
}
