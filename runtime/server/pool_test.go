package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/admission"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/proxy"
	"github.com/pistra/pistra/runtime/record"
)

// onePick is a Pools that picks member for every request and counts the
// picks it made and ended.
type onePick struct {
	member      string
	picks, done int
}

func (o *onePick) Pick(context.Context, *plan.Graph, int, *proxy.PoolRequest) (proxy.PoolPick, *admission.Refusal) {
	o.picks++
	return o, nil
}

// Refused refuses nothing: its one member is always there.
func (o *onePick) Refused(*plan.Graph, *plan.Candidate) *admission.Refusal { return nil }

func (o *onePick) Endpoints() []string { return []string{o.member} }
func (o *onePick) Model() string       { return "" }
func (o *onePick) Served(string, int)  {}
func (o *onePick) Done()               { o.done++ }

// TestPreflightAgreesWithThePooledRequest: with pools, a pool-backed
// candidate is dialled on the member its pick names, and preflight names
// it as what serves, with the member set and the picker it is dialled
// through.
func TestPreflightAgreesWithThePooledRequest(t *testing.T) {
	g := testGraph()
	g.Pools = []plan.Pool{{Name: "gpus", DNS: "gpus.test:8000", Scheme: "http", Picker: "epp.test:9002",
		PickerTimeoutMS: 2000, PickerFailure: plan.PickerFailClosed}}
	g.Providers[0].BaseURL, g.Providers[0].Pool = "", 0
	const member = "10.1.2.3:8000"
	up := testkit.NewUpstream(map[string][]testkit.Reply{member: {testkit.JSON(200, `{"ok":true}`)}})
	o := testOptions(g, up)
	pools := &onePick{member: member}
	o.Pools = pools
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	bearer := map[string]string{"Authorization": "Bearer k-default"}
	req := body(plainBody, "gpt")
	real := s.do(publicRequest{"POST", "/v1/chat/completions", req, bearer})
	if real.Code != 200 || real.Header().Get(record.HeaderProvider) != "oa" || real.Header().Get(record.HeaderEndpoint) != member {
		t.Fatalf("request: %d %v %s", real.Code, real.Header(), real.Body)
	}
	if calls := up.Calls(member); len(calls) != 1 || calls[0].Path != "/v1/chat/completions" {
		t.Errorf("member calls %+v", calls)
	}
	if pools.picks != 1 || pools.done != 1 {
		t.Errorf("%d picks, %d done", pools.picks, pools.done)
	}
	pre := s.do(publicRequest{"POST", "/v1/preflight?route=chat_completions", req, bearer})
	var a testkit.Preflight
	if err := json.Unmarshal(pre.Body.Bytes(), &a); err != nil || pre.Code != 200 {
		t.Fatalf("preflight %d %s", pre.Code, pre.Body)
	}
	want := testkit.WirePool{Name: "gpus", Members: "gpus.test:8000", Pick: "picker", Picker: "epp.test:9002",
		PickerFailure: "closed", PickerTimeoutMS: 2000}
	if a.Serve.Provider != "oa" || a.Serve.Pool == nil || *a.Serve.Pool != want {
		t.Errorf("preflight serves %+v (pool %+v)", a.Serve, a.Serve.Pool)
	}
	if pools.picks != 1 || up.Count() != 1 {
		t.Errorf("preflight picked (%d) or dialled (%d)", pools.picks, up.Count())
	}
}
