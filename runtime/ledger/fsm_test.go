package ledger

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/suspend"
)

func applyCmd(t *testing.T, f *FSM, c command) {
	t.Helper()
	data, err := encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if resp := f.Apply(&raft.Log{Type: raft.LogCommand, Data: data}); resp != nil {
		t.Fatalf("apply: %v", resp)
	}
}

func flushOf(session string, seq, base uint64, spent ...uint64) command {
	b := &batch{Session: session, Seq: seq, Base: base, At: 1000}
	for i, n := range spent {
		b.Deltas = append(b.Deltas, wireDelta{Budget: "daily", Bucket: string(rune('a' + i)), Window: key("").Window, Spent: n})
	}
	return command{Batch: b}
}

// TestResentFlushCountsOnce holds the FSM to counting a timed-out flush
// once, whichever of its copies reach the log and in whatever order:
// budget resends a failed flush merged into the next, so each batch
// carries all its sender settled since the last flush it saw succeed.
func TestResentFlushCountsOnce(t *testing.T) {
	cases := []struct {
		name    string
		applied []command
		want    []uint64 // totals of buckets a, b
	}{
		{"acknowledged flushes add up",
			[]command{flushOf("s", 1, 0, 5), flushOf("s", 2, 1, 2, 1)}, []uint64{7, 1}},
		{"timed out but applied, then resent with more",
			[]command{flushOf("s", 1, 0, 5), flushOf("s", 2, 0, 8, 1)}, []uint64{8, 1}},
		{"timed out and lost, then resent",
			[]command{flushOf("s", 2, 0, 8)}, []uint64{8, 0}},
		{"a late copy after its resend",
			[]command{flushOf("s", 2, 0, 8), flushOf("s", 1, 0, 5)}, []uint64{8, 0}},
		{"several in doubt, all applied",
			[]command{flushOf("s", 1, 0, 5), flushOf("s", 2, 0, 8), flushOf("s", 3, 0, 10, 4)}, []uint64{10, 4}},
		{"several in doubt, only the first applied",
			[]command{flushOf("s", 1, 0, 5), flushOf("s", 3, 0, 10)}, []uint64{10, 0}},
		{"totals saturate",
			[]command{flushOf("s", 1, 0, math.MaxUint64), flushOf("s", 2, 1, 1)}, []uint64{math.MaxUint64, 0}},
		{"sessions are apart",
			[]command{flushOf("s", 1, 0, 5), flushOf("r", 1, 0, 5)}, []uint64{10, 0}},
	}
	for _, c := range cases {
		f := newFSM()
		for _, cmd := range c.applied {
			applyCmd(t, f, cmd)
		}
		got := make([]uint64, 2)
		f.read([]budget.Key{{Budget: "daily", Bucket: "a", Window: key("").Window}, {Budget: "daily", Bucket: "b", Window: key("").Window}}, got)
		if got[0] != c.want[0] || got[1] != c.want[1] {
			t.Errorf("%s: totals %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCompactionDropsOldWindowsAndSilentSessions(t *testing.T) {
	f := newFSM()
	old, cur := budget.Key{Budget: "m", Bucket: "a", Window: 100}, budget.Key{Budget: "m", Bucket: "a", Window: 200}
	applyCmd(t, f, command{Batch: &batch{Session: "gone", Seq: 1, At: 50, Deltas: []wireDelta{{Budget: "m", Bucket: "a", Window: 100, Spent: 3}}}})
	applyCmd(t, f, command{Batch: &batch{Session: "live", Seq: 1, At: 250, Deltas: []wireDelta{{Budget: "m", Bucket: "a", Window: 200, Spent: 4}}}})
	applyCmd(t, f, command{Suspend: &wireSuspension{Kind: suspend.KindKey, Name: "k"}})
	applyCmd(t, f, command{Compact: &compaction{Windows: 150, Sessions: 100}})
	got := make([]uint64, 2)
	f.read([]budget.Key{old, cur}, got)
	if got[0] != 0 || got[1] != 4 {
		t.Errorf("totals after compaction %v, want [0 4]", got)
	}
	if _, ok := f.sessions["gone"]; ok || f.sessions["live"] == nil {
		t.Errorf("sessions after compaction: %v", f.sessions)
	}
	if _, ok := f.suspended(suspensionID{Kind: suspend.KindKey, Name: "k"}); !ok {
		t.Error("compaction dropped a suspension; only a clear may")
	}
}

type memSink struct {
	bytes.Buffer
	fail              bool
	closed, cancelled bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.fail {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func TestSnapshotRestoresTheSameState(t *testing.T) {
	f := newFSM()
	applyCmd(t, f, flushOf("s", 1, 0, 5, 6))
	applyCmd(t, f, flushOf("s", 2, 0, 9, 6)) // in doubt, so the session keeps what it covered
	applyCmd(t, f, command{Suspend: &wireSuspension{Kind: suspend.KindProvider, Name: "openai", Reason: "outage", Node: "n1"}})
	first := persist(t, f)

	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(first))); err != nil {
		t.Fatal(err)
	}
	if again := persist(t, g); !bytes.Equal(first, again) {
		t.Fatalf("restored state persists differently:\n%s\n%s", first, again)
	}
	// The session came back too: a late copy of the applied flush is
	// still recognised.
	applyCmd(t, g, flushOf("s", 3, 0, 9, 6))
	if got := g.totals[budget.Key{Budget: "daily", Bucket: "a", Window: key("").Window}]; got != 9 {
		t.Fatalf("after restore a resent flush counted again: %d", got)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte("\x09{}")))); err == nil {
		t.Fatal("a snapshot of an unknown format restored")
	}
}

func persist(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil || !sink.closed {
		t.Fatalf("persist: %v, closed %v", err, sink.closed)
	}
	return sink.Bytes()
}

func TestPersistCancelsTheSinkOnError(t *testing.T) {
	f := newFSM()
	applyCmd(t, f, flushOf("s", 1, 0, 5))
	snap, _ := f.Snapshot()
	sink := &memSink{fail: true}
	if err := snap.Persist(sink); err == nil || !sink.cancelled || sink.closed {
		t.Fatalf("persist to a failing sink: %v, cancelled %v, closed %v", err, sink.cancelled, sink.closed)
	}
}

func TestCommandsAreValidated(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("{}"), []byte("\x01{}"), []byte("\x01{\"batch\":{\"session\":\"s\",\"seq\":1,\"base\":1}}"),
		[]byte("\x01{\"clear\":{\"kind\":\"model\",\"name\":\"x\"}}"), []byte("\x01{\"suspend\":{\"kind\":\"key\"}}")} {
		if _, err := decode(data); err == nil {
			t.Errorf("decode(%q) accepted", data)
		}
	}
}

// TestSuspensionGenerationMoves: the generation moves on every applied
// suspension, clear and restored snapshot, and not on spend, so what the
// request path derives from suspensions is derived again exactly when
// they change.
func TestSuspensionGenerationMoves(t *testing.T) {
	f := newFSM()
	gen := f.suspGen.Load()
	step := func(what string, moves bool) {
		t.Helper()
		now := f.suspGen.Load()
		if (now != gen) != moves {
			t.Errorf("%s: generation %d -> %d", what, gen, now)
		}
		gen = now
	}
	applyCmd(t, f, flushOf("s", 1, 0, 5, 6))
	step("a flush", false)
	applyCmd(t, f, command{Suspend: &wireSuspension{Kind: suspend.KindRule, Name: "no-o1"}})
	step("a rule suspended", true)
	first := persist(t, f)
	applyCmd(t, f, command{Clear: &suspensionID{Kind: suspend.KindRule, Name: "no-o1"}})
	step("a rule lifted", true)
	if err := f.Restore(io.NopCloser(bytes.NewReader(first))); err != nil {
		t.Fatal(err)
	}
	step("a snapshot restored", true)
	if _, ok := f.suspended(suspensionID{Kind: suspend.KindRule, Name: "no-o1"}); !ok {
		t.Error("the restored snapshot lost the rule suspension")
	}
}
