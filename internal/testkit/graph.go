package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/pistra/pistra/runtime/plan"
)

// HashKey is the hash a graph stores for client key secret.
func HashKey(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(d[:])
}

// GraphBuilder builds a decision graph by hand, keeping its indexes: each
// method adds one thing and returns where it went, and identical candidate
// lists, skip lists and plans are stored once, as the compiler stores them.
// The graph under construction is embedded, for what has no method (pools,
// budgets, keys with a given hash).
type GraphBuilder struct {
	plan.Graph
	lists map[string]int
	skips map[string]int
	plans map[plan.Plan]int
}

// NewGraph starts a graph with sourceHash that rejects lossy serving by
// default.
func NewGraph(sourceHash string) *GraphBuilder {
	return &GraphBuilder{Graph: plan.Graph{SourceHash: sourceHash, OnFidelityLoss: plan.LossReject},
		lists: map[string]int{}, skips: map[string]int{}, plans: map[plan.Plan]int{}}
}

// Provider adds p and returns its index.
func (b *GraphBuilder) Provider(p plan.Provider) int {
	b.Providers = append(b.Providers, p)
	return len(b.Providers) - 1
}

// Plan adds p over cands and skips (its Candidates and Skips are set here)
// and returns its index.
func (b *GraphBuilder) Plan(p plan.Plan, cands []plan.Candidate, skips []plan.Skip) int {
	p.Candidates = intern(b.lists, &b.CandidateLists, cands)
	p.Skips = intern(b.skips, &b.SkipLists, skips)
	i, ok := b.plans[p]
	if !ok {
		i = len(b.Plans)
		b.plans[p] = i
		b.Plans = append(b.Plans, p)
	}
	return i
}

// DeniedPlan is Plan for a plan whose static access rules deny some of
// withDenied, each marked with them (Candidate.Denied): the others are
// its candidates, and its Denied and WithDenied follow from the marks.
func (b *GraphBuilder) DeniedPlan(p plan.Plan, withDenied []plan.Candidate, skips []plan.Skip) int {
	var cands []plan.Candidate
	for _, c := range withDenied {
		if c.Denied == 0 {
			cands = append(cands, c)
		}
		p.Denied |= c.Denied
	}
	p.WithDenied = intern(b.lists, &b.CandidateLists, withDenied)
	return b.Plan(p, cands, skips)
}

// Table adds a routing table of entries, sorted as the runtime expects,
// and returns its index.
func (b *GraphBuilder) Table(entries ...plan.Entry) int {
	plan.SortEntries(entries)
	b.Tables = append(b.Tables, plan.Table{Entries: entries})
	return len(b.Tables) - 1
}

// Profile adds p and returns its index.
func (b *GraphBuilder) Profile(p plan.Profile) int {
	b.Profiles = append(b.Profiles, p)
	return len(b.Profiles) - 1
}

// Key adds key name, which presents secret, on profile.
func (b *GraphBuilder) Key(name, secret string, profile int) {
	b.Keys = append(b.Keys, plan.Key{Name: name, Hash: HashKey(secret), Profile: profile})
}

// Build returns the graph, its Names being every model and alias of its
// providers and every name its tables route, and each table's RouteSets
// derived from them. The builder is done with.
func (b *GraphBuilder) Build() *plan.Graph {
	names := map[string]bool{}
	for _, p := range b.Providers {
		for _, m := range p.Models {
			names[m.Name] = true
		}
		for _, a := range p.Aliases {
			names[a.Name] = true
		}
	}
	for _, t := range b.Tables {
		for _, e := range t.Entries {
			names[e.Model] = true
		}
	}
	b.Names = slices.Sorted(maps.Keys(names))
	for i := range b.Tables {
		b.Tables[i].RouteSets = plan.RouteSetsOf(b.Names, b.Tables[i].Entries)
	}
	return &b.Graph
}

// intern stores l in lists unless an equal list is there already, and
// returns its index. An empty list is stored as [], never null, as the
// compiler stores it.
func intern[T any](seen map[string]int, lists *[][]T, l []T) int {
	key := fmt.Sprintf("%+v", l)
	if i, ok := seen[key]; ok {
		return i
	}
	if l == nil {
		l = []T{}
	}
	seen[key] = len(*lists)
	*lists = append(*lists, l)
	return len(*lists) - 1
}
