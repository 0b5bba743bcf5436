package ledger

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pistra/pistra/runtime/budget"
	"github.com/pistra/pistra/runtime/plan"
)

// formatV1 leads every command and snapshot: the raft log and the
// snapshots outlive the binary that wrote them, so a reader must know
// which encoding it holds.
const formatV1 byte = 1

// command is one raft log entry: exactly one of its fields is set.
type command struct {
	Batch   *batch          `json:"batch,omitempty"`
	Suspend *wireSuspension `json:"suspend,omitempty"`
	Clear   *suspensionID   `json:"clear,omitempty"`
	Compact *compaction     `json:"compact,omitempty"`
}

// batch is one flush of one node's settled spend and metered usage.
// Session, Seq and Base make it count exactly once however often a
// timed-out flush is retried (see FSM.applyBatch): Seq rises by one per
// flush of Session (a node's process), and Base is the Seq of the last
// flush the sender knows was applied, 0 if none; Deltas and Usage hold
// everything settled since Base's flush. Usage rides in the same entry
// as the spend of the same answers, so one flush is one write, and counts
// exactly once by the same rule; entries written before it existed have
// none.
type batch struct {
	Session string      `json:"session"`
	Seq     uint64      `json:"seq"`
	Base    uint64      `json:"base"`
	At      int64       `json:"at"` // the sender's clock, Unix seconds: when the session was last heard from
	Deltas  []wireDelta `json:"deltas"`
	Usage   []wireUsage `json:"usage,omitempty"`
}

// wireDelta is budget.Delta as stored: the log's encoding is this
// package's, not whatever budget's field names become.
type wireDelta struct {
	Budget string      `json:"b"`
	Bucket string      `json:"k"`
	Period plan.Window `json:"p,omitempty"`
	Window int64       `json:"w"`
	Spent  uint64      `json:"n"`
}

func (d wireDelta) key() budget.Key {
	return budget.Key{Budget: d.Budget, Bucket: d.Bucket, Period: d.Period, Window: d.Window}
}

// compaction forgets what no window can still count: the totals of
// windows that started before Windows, the usage rows of days that
// started before Usage (0, in entries older than the usage ledger, drops
// none), and the sessions last heard from before Sessions (all Unix
// seconds, the leader's clock, carried in the entry so that every replica
// drops the same).
type compaction struct {
	Windows  int64 `json:"windows"`
	Usage    int64 `json:"usage,omitempty"`
	Sessions int64 `json:"sessions"`
}

func encode(c command) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append([]byte{formatV1}, b...), nil
}

func decode(data []byte) (command, error) {
	var c command
	if len(data) == 0 || data[0] != formatV1 {
		return c, errors.New("ledger: command of an unknown format")
	}
	if err := json.Unmarshal(data[1:], &c); err != nil {
		return c, fmt.Errorf("ledger: command: %w", err)
	}
	return c, c.validate()
}

func (c *command) validate() error {
	set := 0
	for _, present := range []bool{c.Batch != nil, c.Suspend != nil, c.Clear != nil, c.Compact != nil} {
		if present {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("ledger: a command sets one operation, this one %d", set)
	}
	switch {
	case c.Batch != nil:
		if c.Batch.Session == "" || c.Batch.Seq == 0 || c.Batch.Base >= c.Batch.Seq {
			return errors.New("ledger: a batch needs a session and a sequence above its base")
		}
	case c.Suspend != nil:
		return c.Suspend.id().validate()
	case c.Clear != nil:
		return c.Clear.validate()
	}
	return nil
}

func wireDeltas(ds []budget.Delta) []wireDelta {
	out := make([]wireDelta, len(ds))
	for i, d := range ds {
		out[i] = wireDelta{Budget: d.Key.Budget, Bucket: d.Key.Bucket, Period: d.Key.Period, Window: d.Key.Window, Spent: d.Spent}
	}
	return out
}

// wireUsage is budget.UsageDelta as stored.
type wireUsage struct {
	Day           int64  `json:"d"`
	Provider      string `json:"p"`
	Model         string `json:"m"`
	KeyID         string `json:"k,omitempty"`
	WorkspaceID   string `json:"ws,omitempty"`
	Requests      uint64 `json:"r,omitempty"`
	Estimated     uint64 `json:"e,omitempty"`
	Input         uint64 `json:"i,omitempty"`
	CachedInput   uint64 `json:"ci,omitempty"`
	CacheCreation uint64 `json:"cc,omitempty"`
	Output        uint64 `json:"o,omitempty"`
	Reasoning     uint64 `json:"rs,omitempty"`
}

func (u wireUsage) key() budget.UsageKey {
	return budget.UsageKey{Day: u.Day, Provider: u.Provider, Model: u.Model, KeyID: u.KeyID, WorkspaceID: u.WorkspaceID}
}

func (u wireUsage) counts() budget.UsageCounts {
	return budget.UsageCounts{Requests: u.Requests, Estimated: u.Estimated, Input: u.Input, CachedInput: u.CachedInput,
		CacheCreation: u.CacheCreation, Output: u.Output, Reasoning: u.Reasoning}
}

func toWireUsage(k budget.UsageKey, c budget.UsageCounts) wireUsage {
	return wireUsage{Day: k.Day, Provider: k.Provider, Model: k.Model, KeyID: k.KeyID, WorkspaceID: k.WorkspaceID,
		Requests: c.Requests, Estimated: c.Estimated, Input: c.Input, CachedInput: c.CachedInput,
		CacheCreation: c.CacheCreation, Output: c.Output, Reasoning: c.Reasoning}
}

func wireUsages(ds []budget.UsageDelta) []wireUsage {
	out := make([]wireUsage, len(ds))
	for i, d := range ds {
		out[i] = toWireUsage(d.Key, d.Counts)
	}
	return out
}
