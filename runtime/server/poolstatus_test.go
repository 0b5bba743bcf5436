package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/pool"
)

// TestStatusShowsPoolMembers: /admin/v1/status shows each pooled
// provider's members as DNS gives them, with their age, and a reload that
// names another DNS name shows its members as soon as it is applied.
func TestStatusShowsPoolMembers(t *testing.T) {
	dns := dnstest.Start(t)
	dns.Set(t, "gpus.test", 0, "127.0.0.2", "127.0.0.3")
	dns.Set(t, "gpus2.test", 0, "127.0.0.4")
	pooled := func(name string) *plan.Graph {
		g := testGraph()
		g.Pools = []plan.Pool{{Name: "gpus", DNS: name, Scheme: "http"}}
		g.Providers[0].BaseURL, g.Providers[0].Pool = "", 0
		return g
	}
	var serving atomic.Pointer[plan.Graph]
	serving.Store(pooled("gpus.test:8000"))
	o := testOptions(nil, okUpstream())
	o.Load = func() (*plan.Graph, string, error) { return serving.Load(), "test", nil }
	o.PoolOptions = pool.Options{Resolver: dns.Addr(), MinTTL: 50 * time.Millisecond, MaxTTL: 200 * time.Millisecond}
	s := startOnLoopback(t, o)

	status := func() pool.Status {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+s.AdminAddr()+"/admin/v1/status", nil)
		req.Header.Set("Authorization", "Bearer t")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st admin.Status
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Pools) != 1 {
			t.Fatalf("status: %v, pools %+v", err, st.Pools)
		}
		return st.Pools[0]
	}
	st := status()
	if st.Provider != "oa" || st.Pool != "gpus" || st.DNS != "gpus.test:8000" ||
		!slices.Equal(st.Members, []string{"127.0.0.2:8000", "127.0.0.3:8000"}) || st.ResolvedAt == nil || st.AgeSeconds > 5 {
		t.Errorf("pool status: %+v", st)
	}

	serving.Store(pooled("gpus2.test:8000"))
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.DNS != "gpus2.test:8000" || !slices.Equal(st.Members, []string{"127.0.0.4:8000"}) {
		t.Errorf("after the reload: %+v", st)
	}
}
