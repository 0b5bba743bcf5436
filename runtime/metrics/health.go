package metrics

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pistra/pistra/runtime/version"
)

// Health is what a scrape reads of the node's state at that moment: the
// durable ledger, the budget flushes and the circuit breakers. The server
// supplies it (ReadHealth); until it does, none of these series exist.
type Health interface {
	// Ledger is the durable ledger's state as this node sees it; false
	// when there is no durable ledger.
	Ledger() (Ledger, bool)
	// Flushes says whether this node's budget flushes are failing (the
	// node spends on its own share) and when one last succeeded (zero when
	// none has yet).
	Flushes() (degraded bool, last time.Time)
	// Circuits appends every provider breaker's state to dst.
	Circuits(dst []Circuit) []Circuit
}

// Ledger is one node's view of the raft ledger.
type Ledger struct {
	// Ready: the node replayed what its directory held.
	Ready, HasLeader, IsLeader      bool
	Term, CommitIndex, AppliedIndex uint64
	// LastContact is how long ago a follower last heard from its leader;
	// 0 on the leader.
	LastContact time.Duration
	Voters      int
}

// Circuit is one provider's breaker; State is circuit.State's value
// (0 closed, 1 open, 2 half open).
type Circuit struct {
	Provider string
	State    int
}

// health holds the build's identity and the gauges read from Health at
// each scrape.
type health struct {
	build, bundle *prometheus.GaugeVec
	source        atomic.Pointer[Health]
}

func newHealth() *health {
	h := &health{
		build: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_build_info",
			Help: "Always 1: the pistrad build serving, by version and Go version.",
		}, []string{"version", "goversion"}),
		bundle: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "pistra_bundle_info",
			Help: "Always 1: the policy bundle serving, by content digest and signing key id (unsigned when none).",
		}, []string{"digest", "signed_by"}),
	}
	h.build.WithLabelValues(version.String(), runtime.Version()).Set(1)
	return h
}

func (h *health) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.build, h.bundle, h}
}

// ReadHealth makes every scrape read h.
func (m *Metrics) ReadHealth(h Health) { m.health.source.Store(&h) }

// Bundle names the bundle now serving, forgetting the one before.
func (m *Metrics) Bundle(digest, signedBy string) {
	m.health.bundle.Reset()
	m.health.bundle.WithLabelValues(digest, signedBy).Set(1)
}

func gauge(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	raftReady       = gauge("pistra_raft_ready", "1 once this node replayed the ledger its directory held.")
	raftHasLeader   = gauge("pistra_raft_has_leader", "1 while this node knows a ledger leader; 0 is a degraded ledger (budgets held on the last known totals).")
	raftIsLeader    = gauge("pistra_raft_is_leader", "1 on the ledger's leader.")
	raftTerm        = gauge("pistra_raft_term", "The raft term this node is in: it rises with every election.")
	raftCommitIndex = gauge("pistra_raft_commit_index", "The highest ledger log index this node knows committed.")
	raftApplied     = gauge("pistra_raft_applied_index", "The highest ledger log index this node applied to its replica.")
	raftLastContact = gauge("pistra_raft_last_contact_seconds", "Time since this follower last heard from its leader; 0 on the leader.")
	raftVoters      = gauge("pistra_raft_voters", "Voters in the ledger cluster's configuration as this node reads it.")
	ledgerDegraded  = gauge("pistra_ledger_degraded", "1 while this node's budget flushes fail: it spends on its own degraded share of each limit.")
	ledgerFlushAge  = gauge("pistra_ledger_last_flush_age_seconds", "Time since this node's last successful budget flush (absent until the first).")
	circuitState    = gauge("pistra_circuit_state", "A provider's circuit breaker: 0 closed, 1 open (out of rotation), 2 half open (probing).", "provider")
)

// Describe lists the gauges read from Health.
func (h *health) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range [...]*prometheus.Desc{raftReady, raftHasLeader, raftIsLeader, raftTerm, raftCommitIndex, raftApplied,
		raftLastContact, raftVoters, ledgerDegraded, ledgerFlushAge, circuitState} {
		ch <- d
	}
}

// Collect reads Health, once per scrape.
func (h *health) Collect(ch chan<- prometheus.Metric) {
	p := h.source.Load()
	if p == nil {
		return
	}
	src := *p
	if l, ok := src.Ledger(); ok {
		for _, g := range [...]struct {
			d *prometheus.Desc
			v float64
		}{
			{raftReady, bit(l.Ready)}, {raftHasLeader, bit(l.HasLeader)}, {raftIsLeader, bit(l.IsLeader)},
			{raftTerm, float64(l.Term)}, {raftCommitIndex, float64(l.CommitIndex)}, {raftApplied, float64(l.AppliedIndex)},
			{raftLastContact, l.LastContact.Seconds()}, {raftVoters, float64(l.Voters)},
		} {
			ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, g.v)
		}
	}
	degraded, last := src.Flushes()
	ch <- prometheus.MustNewConstMetric(ledgerDegraded, prometheus.GaugeValue, bit(degraded))
	if !last.IsZero() {
		ch <- prometheus.MustNewConstMetric(ledgerFlushAge, prometheus.GaugeValue, time.Since(last).Seconds())
	}
	for _, c := range src.Circuits(nil) {
		ch <- prometheus.MustNewConstMetric(circuitState, prometheus.GaugeValue, float64(c.State), c.Provider)
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
