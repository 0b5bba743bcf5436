// Package snapshot is what one policy bundle serves: the decision graph,
// its providers resolved for serving, its CEL programs, and the indexes
// the hot path reads (key digests, the models each profile lists). A
// snapshot is built and validated whole before it is swapped in, and is
// read-only afterwards: a request keeps the one it started with until it
// finishes, whatever reloads happen meanwhile. State that outlives a
// reload (circuit breakers, budget buckets) is not here but kept by its
// own package, which finds it by the request's graph.
package snapshot

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/runtime/expr"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

// Snapshot is everything one policy bundle needs at request time.
type Snapshot struct {
	Graph *plan.Graph
	// Upstreams is indexed like Graph.Providers, with credentials resolved.
	Upstreams []upstream.Upstream
	// MCPServers and Agents are indexed like Graph.MCPServers and
	// Graph.Agents, likewise.
	MCPServers, Agents []upstream.Service
	// Programs are the bundle's CEL programs, loaded once.
	Programs *expr.Programs
	// RequestRules[profile] is Graph.RequestRules(profile), kept so no
	// request filters the rules again.
	RequestRules [][]plan.RequestRule
	// Source says where the graph came from ("compiled-in", a bundle path).
	Source   string
	LoadedAt time.Time
	// keys indexes key digests by their first 8 bytes.
	keys map[uint64][]keyEntry
	// models[profile][dialect] is what GET /v1/models lists, sorted.
	models [][numDialects][]string
}

// Dialect indexes of Snapshot.models.
const (
	dialectOpenAI = iota
	dialectAnthropic
	numDialects
)

// New validates g for serving: every credential present in the
// environment, every key hash well formed and unique, every CEL program
// loadable.
func New(g *plan.Graph, source string, env func(string) (string, bool)) (*Snapshot, error) {
	ups, err := upstream.Resolve(g, env)
	if err != nil {
		return nil, err
	}
	mcp, agents, err := upstream.ResolveServices(g, env)
	if err != nil {
		return nil, err
	}
	progs, err := expr.Load(g.CEL)
	if err != nil {
		return nil, fmt.Errorf("cel: %w", err)
	}
	keys, err := keyIndex(g)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Graph: g, Upstreams: ups, MCPServers: mcp, Agents: agents, Programs: progs, Source: source, LoadedAt: time.Now(), keys: keys}
	s.models = make([][numDialects][]string, len(g.Profiles))
	s.RequestRules = make([][]plan.RequestRule, len(g.Profiles))
	for p := range g.Profiles {
		s.RequestRules[p] = g.RequestRules(p)
		for _, r := range plan.Routes {
			d := dialectIndex(r.Dialect())
			s.models[p][d] = append(s.models[p][d], g.Listed(p, r)...)
		}
		for d := range s.models[p] {
			slices.Sort(s.models[p][d])
			s.models[p][d] = slices.Compact(s.models[p][d])
		}
	}
	return s, nil
}

type keyEntry struct {
	digest  [sha256.Size]byte
	profile int
	key     int // index into Graph.Keys
}

func digestPrefix(d *[sha256.Size]byte) uint64 { return binary.LittleEndian.Uint64(d[:8]) }

// digestOf reads a key hash, "sha256:<64 hex digits>".
func digestOf(hash string) (d [sha256.Size]byte, ok bool) {
	h, ok := strings.CutPrefix(hash, "sha256:")
	// The length first: hex.Decode writes past d for a longer digest.
	if !ok || len(h) != 2*sha256.Size {
		return d, false
	}
	_, err := hex.Decode(d[:], []byte(h))
	return d, err == nil
}

func keyIndex(g *plan.Graph) (map[uint64][]keyEntry, error) {
	keys := make(map[uint64][]keyEntry, len(g.Keys))
	seen := make(map[[sha256.Size]byte]bool, len(g.Keys))
	for ki, k := range g.Keys {
		d, ok := digestOf(k.Hash)
		if !ok {
			return nil, fmt.Errorf("key %q: hash must be sha256:<64 hex digits>", k.Name)
		}
		if k.Profile < 0 || k.Profile >= len(g.Profiles) {
			return nil, fmt.Errorf("key %q: profile index %d out of range", k.Name, k.Profile)
		}
		if seen[d] {
			return nil, fmt.Errorf("key %q: the same key is declared twice", k.Name)
		}
		seen[d] = true
		keys[digestPrefix(&d)] = append(keys[digestPrefix(&d)], keyEntry{digest: d, profile: k.Profile, key: ki})
	}
	return keys, nil
}

// KeyOf returns the declared key a presented key is (its index in
// Graph.Keys) and the profile it names. The presented key is hashed first;
// the map probe on the digest's first 8 bytes can reveal nothing useful
// about a stored key, and full digests are compared in constant time.
func (s *Snapshot) KeyOf(key string) (index, profile int, ok bool) {
	d := sha256.Sum256([]byte(key))
	for _, e := range s.keys[digestPrefix(&d)] {
		if subtle.ConstantTimeCompare(e.digest[:], d[:]) == 1 {
			return e.key, e.profile, true
		}
	}
	return 0, 0, false
}

// KeyNamed returns the key declared as name (its index in Graph.Keys) and
// its profile, for the admin acting on a key's behalf.
func (s *Snapshot) KeyNamed(name string) (index, profile int, ok bool) {
	for i, k := range s.Graph.Keys {
		if k.Name == name {
			return i, k.Profile, true
		}
	}
	return 0, 0, false
}

// Service is service i of kind k, resolved.
func (s *Snapshot) Service(k plan.ServiceKind, i int) *upstream.Service {
	if k == plan.KindAgent {
		return &s.Agents[i]
	}
	return &s.MCPServers[i]
}

// Models is what GET /v1/models lists for profile in dialect d, sorted.
func (s *Snapshot) Models(profile int, d plan.Dialect) []string {
	return s.models[profile][dialectIndex(d)]
}

func dialectIndex(d plan.Dialect) int {
	if d == plan.DialectAnthropic {
		return dialectAnthropic
	}
	return dialectOpenAI
}
