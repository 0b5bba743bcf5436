package ledger

import (
	"fmt"
	"testing"

	"github.com/pistra/pistra/runtime/budget"
)

// BenchmarkFlush is one flush tick of a busy node: an Add of 100 buckets'
// spend, then a Read of their 100 totals. On a follower the Add is a
// round trip to the leader over mutual TLS on top of the commit.
func BenchmarkFlush(b *testing.B) {
	b.Run("nodes=1", func(b *testing.B) {
		benchFlush(b, openSingle(b, b.TempDir(), quick).Node)
	})
	b.Run("nodes=3/leader", func(b *testing.B) {
		benchFlush(b, newCluster(b, 3).leader().Node)
	})
	b.Run("nodes=3/follower", func(b *testing.B) {
		benchFlush(b, newCluster(b, 3).followers()[0].Node)
	})
}

func benchFlush(b *testing.B, n *Node) {
	keys := make([]budget.Key, 100)
	deltas := make([]budget.Delta, len(keys))
	for i := range keys {
		keys[i] = budget.Key{Budget: "daily", Bucket: fmt.Sprintf("key-%03d", i), Window: 1_767_225_600}
		deltas[i] = budget.Delta{Key: keys[i], Spent: 1}
	}
	totals := make([]uint64, len(keys))
	b.ReportAllocs()
	for b.Loop() {
		if err := n.Add(deltas, nil); err != nil {
			b.Fatal(err)
		}
		if err := n.Read(keys, totals); err != nil {
			b.Fatal(err)
		}
	}
}
