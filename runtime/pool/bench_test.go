package pool_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// BenchmarkPick is what choosing a member adds to a pooled request, apart
// from the picker's own exchange: the members in turn, and a picker's
// pick checked against the set (the fake answers at once).
func BenchmarkPick(b *testing.B) {
	for _, bc := range []struct {
		name string
		pool plan.Pool
	}{
		{"round_robin", plan.Pool{}},
		{"picker", plan.Pool{Picker: "picker.test:9002"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			answer := &pool.Answer{Endpoints: []string{"127.0.0.3:8000", "127.0.0.2:8000"}}
			fp := &fakeAnswer{answer: answer}
			f, g := benchFixture(b, bc.pool, fp)
			r := &pool.Request{Model: "llama", RequestID: "req", Header: http.Header{"User-Agent": {"sdk"}}, Body: []byte(`{"model":"llama"}`)}
			b.ReportAllocs()
			for b.Loop() {
				pk, no := f.set.Pick(context.Background(), g, 0, r)
				if no != nil {
					b.Fatal(no.Error)
				}
				pk.Done()
			}
		})
	}
}

// fakeAnswer answers every pick with the same answer, recording nothing.
type fakeAnswer struct{ answer *pool.Answer }

func (p *fakeAnswer) Pick(context.Context, pool.Query) (*pool.Answer, error) { return p.answer, nil }
func (p *fakeAnswer) Close() error                                           { return nil }

func benchFixture(b *testing.B, p plan.Pool, picker pool.Picker) (*fixture, *plan.Graph) {
	f := newFixture(b, func(o *pool.Options) {
		o.Picker = func(*plan.Pool) (pool.Picker, error) { return picker, nil }
	})
	f.dns.Set(b, "vllm.test", 0, "127.0.0.2", "127.0.0.3", "127.0.0.4")
	p.Name, p.DNS = "vllm", "vllm.test:8000"
	g := graph(p)
	f.set.Load(g)
	return f, g
}
