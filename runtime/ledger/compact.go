package ledger

import (
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// Retention is how long the total of a window is kept after the window
// started. The longest window is a month (31 days at most); a month's
// total is kept through the whole of the next month too, so a bucket
// still draining from it, or a report on it, reads its true total; two
// days more cover clocks that disagree. Older totals are dropped, so the
// state holds at most about two months of buckets.
const Retention = 64 * 24 * time.Hour

// sessionRetention is how long what a process's last flush covered is
// kept after that flush. It is only needed while the process retries a
// flush that may have been applied, and a process retries every flush
// interval until one succeeds; one silent for a day has stopped, or has
// had nothing to flush since its last success.
const sessionRetention = 24 * time.Hour

// compactEvery is how often the leader proposes a compaction: windows
// are minutes to months long, and a total kept an hour past its
// retention costs nothing.
const compactEvery = time.Hour

func (n *Node) compactLoop() {
	t := time.NewTicker(compactEvery)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			if !n.leads() {
				continue
			}
			if err := n.compact(now); err != nil {
				n.log.Warn("ledger: compaction", "err", err)
			}
		}
	}
}

// compact proposes dropping what is older than the retentions as of now.
// The cutoffs travel in the entry, so every replica drops the same.
func (n *Node) compact(now time.Time) error {
	return n.write(n.ctx, command{Compact: &compaction{
		Windows:  now.Add(-Retention).Unix(),
		Usage:    now.Add(-budget.UsageRetention).Unix(),
		Sessions: now.Add(-sessionRetention).Unix(),
	}})
}
