package compiler

import (
	"slices"
	"strconv"

	"github.com/pistra/pistra/runtime/plan"
)

// interner stores candidate lists, skip lists, plans and tables once each
// in the graph (copies: callers may reuse their slices), keyed by a
// canonical encoding, and hands out their indexes in first-seen order.
// Many profiles share most of their plans, which keeps the graph (and gen/)
// small and a policy change a small diff.
type interner struct {
	g                           *plan.Graph
	cands, skipsIdx, plans, tbl map[string]int
	buf                         []byte
}

func newInterner(g *plan.Graph) *interner {
	g.CandidateLists, g.SkipLists, g.Plans, g.Tables = [][]plan.Candidate{}, [][]plan.Skip{}, []plan.Plan{}, []plan.Table{}
	return &interner{g: g, cands: map[string]int{}, skipsIdx: map[string]int{}, plans: map[string]int{}, tbl: map[string]int{}}
}

// lookup returns the index stored under the key in in.buf, or adds one
// with add. The map lookup with string(buf) does not allocate.
func (in *interner) lookup(m map[string]int, add func() int) int {
	if i, ok := m[string(in.buf)]; ok {
		return i
	}
	i := add()
	m[string(in.buf)] = i
	return i
}

func (in *interner) candidates(cs []plan.Candidate) int {
	b := in.buf[:0]
	for _, c := range cs {
		b = strconv.AppendInt(b, int64(c.Provider), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(c.Channel), 10)
		b = append(b, ',')
		b = appendStr(b, string(c.Tier))
		b = appendStr(b, c.Model)
		b = appendStr(b, string(c.Translate))
		b = strconv.AppendUint(b, uint64(c.Preserves), 10)
		b = append(b, 0)
		b = appendStr(b, c.Origin)
		b = strconv.AppendBool(b, c.Primary)
		b = append(b, 0)
		b = appendStr(b, c.PoolSubset)
		b = strconv.AppendUint(b, uint64(c.Denied), 10)
		b = append(b, 1)
	}
	in.buf = b
	return in.lookup(in.cands, func() int {
		in.g.CandidateLists = append(in.g.CandidateLists, nonNil(slices.Clone(cs)))
		return len(in.g.CandidateLists) - 1
	})
}

func (in *interner) skips(ss []plan.Skip) int {
	b := in.buf[:0]
	for _, s := range ss {
		b = strconv.AppendInt(b, int64(s.Provider), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(s.Channel), 10)
		b = append(b, 0)
		b = appendStr(b, s.Model)
		b = appendStr(b, s.Reason)
		b = strconv.AppendUint(b, uint64(s.Missing), 10)
		b = append(b, 0)
		b = appendStr(b, string(s.Translate))
		b = strconv.AppendUint(b, uint64(s.Rules), 10)
		b = append(b, 1)
	}
	in.buf = b
	return in.lookup(in.skipsIdx, func() int {
		in.g.SkipLists = append(in.g.SkipLists, nonNil(slices.Clone(ss)))
		return len(in.g.SkipLists) - 1
	})
}

func (in *interner) plan(p plan.Plan) int {
	b := strconv.AppendInt(in.buf[:0], int64(p.Candidates), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.Skips), 10)
	b = append(b, ',')
	b = strconv.AppendBool(b, p.NativeOnly)
	b = append(b, ',')
	b = strconv.AppendBool(b, p.Listed)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(p.Denied), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(p.WithDenied), 10)
	in.buf = b
	return in.lookup(in.plans, func() int {
		in.g.Plans = append(in.g.Plans, p)
		return len(in.g.Plans) - 1
	})
}

func (in *interner) table(es []plan.Entry) int {
	b := in.buf[:0]
	for _, e := range es {
		b = appendStr(b, string(e.Route))
		b = appendStr(b, e.Model)
		b = strconv.AppendInt(b, int64(e.Plan), 10)
		b = append(b, 1)
	}
	in.buf = b
	return in.lookup(in.tbl, func() int {
		in.g.Tables = append(in.g.Tables, plan.Table{Entries: nonNil(es), RouteSets: plan.RouteSetsOf(in.g.Names, es)})
		return len(in.g.Tables) - 1
	})
}

// nonNil keeps empty lists as [] rather than null in bundle.json.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// appendStr writes a length-prefixed string, so keys stay unambiguous
// whatever bytes a name holds.
func appendStr(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}
