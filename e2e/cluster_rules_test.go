package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/budget"
)

// preflightView is what a preflight answered, by the documented names:
// the refusal's code, or the suspended rules the decision skipped.
type preflightView struct {
	status int
	Error  struct {
		Code string `json:"code"`
	} `json:"error"`
	SuspendedRules []struct {
		Name      string `json:"name"`
		Code      string `json:"code"`
		Profile   string `json:"profile"`
		Static    bool   `json:"static"`
		WouldDeny []struct {
			Provider string `json:"provider"`
			Model    string `json:"model"`
			Reason   string `json:"reason"`
		} `json:"would_deny"`
	} `json:"suspended_rules"`
}

// preflights asks n both preflights of clusterBody: the public one with
// key, and the admin's on behalf of the key named name.
func (n *clusterNode) preflights(key, name string) ([2]preflightView, error) {
	var out [2]preflightView
	req, err := http.NewRequest(http.MethodPost, "http://"+n.publicAddr()+"/v1/preflight", bytes.NewReader(clusterBody))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := n.client.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out, err
	}
	out[0].status = resp.StatusCode
	if err := json.Unmarshal(b, &out[0]); err != nil {
		return out, fmt.Errorf("public preflight: %s: %s", resp.Status, b)
	}
	code, body, err := n.adminSend(http.MethodPost, "/admin/v1/preflight?key="+name, string(clusterBody))
	if err != nil {
		return out, err
	}
	out[1].status = code
	if err := json.Unmarshal([]byte(body), &out[1]); err != nil {
		return out, fmt.Errorf("admin preflight: %d: %s", code, body)
	}
	return out, nil
}

// ruleCase is one access rule of clusterPolicy denying its key the model.
type ruleCase struct {
	rule, key, keyName, code, profile string
	static                            bool
}

// TestClusterRuleSuspensionReachesEveryNode: a rule the build folded into
// the plans (deployment-wide) and one read per request (a profile's, on
// the key) each refuse their key 403 with the rule's code on every node.
// Suspended through one follower's admin API, each lets the same request
// through on every node within one flush interval; lifted through
// another node, each denies again as soon. Both preflights show every
// step: the refusal, then the suspended rule the decision skipped and
// what it would have denied; the status counts what it let through.
func TestClusterRuleSuspensionReachesEveryNode(t *testing.T) {
	c := newTestCluster(t, 1000)
	leader := c.waitSettled(20 * time.Second)
	setter, lifter := c.followers(leader)[0], leader
	for _, tc := range []ruleCase{
		{rule: "gated-mini", key: keyGated, keyName: "gated", code: "mini_gated", static: true},
		{rule: "held-key", key: keyHeld, keyName: "held", code: "key_held", profile: "held"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			refused := func(a answer) bool { return a.err == nil && a.status == http.StatusForbidden && a.code == tc.code }
			c.checkRuleStep(t, tc, refused, "before the suspension")

			code, body, err := setter.adminSend("POST", "/admin/v1/suspensions", `{"kind":"rule","name":"`+tc.rule+`","reason":"e2e"}`)
			if err != nil || code != http.StatusOK {
				t.Fatalf("suspend on %s: %d %s %v", setter.id, code, body, err)
			}
			withinFlush(t, "served", c.untilEveryNode(t, time.Now(), 10*time.Second, tc.key, answered))
			c.checkRuleStep(t, tc, answered, "suspended")
			for _, n := range c.nodes {
				c.checkRuleStatus(t, n, tc, true)
			}

			if code, body, err := lifter.adminSend("DELETE", "/admin/v1/suspensions/rule/"+tc.rule, ""); err != nil || code != http.StatusOK {
				t.Fatalf("lift on %s: %d %s %v", lifter.id, code, body, err)
			}
			withinFlush(t, "refused", c.untilEveryNode(t, time.Now(), 10*time.Second, tc.key, refused))
			c.checkRuleStep(t, tc, refused, "lifted")
			for _, n := range c.nodes {
				c.checkRuleStatus(t, n, tc, false)
			}
		})
	}
}

func withinFlush(t *testing.T, what string, took map[string]time.Duration) {
	t.Helper()
	t.Logf("%s after %v", what, took)
	for id, d := range took {
		if d > budget.FlushInterval {
			t.Errorf("%s %s after the change, later than one flush interval", id, d)
		}
	}
}

// checkRuleStep holds every node's answer to tc's key to want, and both
// its preflights to the same: the refusal with the rule's code, or an
// answer naming the suspended rule the decision skipped.
func (c *testCluster) checkRuleStep(t *testing.T, tc ruleCase, want func(answer) bool, step string) {
	t.Helper()
	for _, n := range c.nodes {
		a := n.chat(tc.key)
		if !want(a) {
			t.Errorf("%s %s: %+v", n.id, step, a)
		}
		views, err := n.preflights(tc.key, tc.keyName)
		if err != nil {
			t.Fatalf("%s %s: %v", n.id, step, err)
		}
		for i, v := range views {
			which := [2]string{"public", "admin"}[i]
			if a.status == http.StatusForbidden {
				if v.status != http.StatusForbidden || v.Error.Code != tc.code || len(v.SuspendedRules) != 0 {
					t.Errorf("%s %s: %s preflight %+v, want 403 %s", n.id, step, which, v, tc.code)
				}
				continue
			}
			if v.status != http.StatusOK || len(v.SuspendedRules) != 1 {
				t.Errorf("%s %s: %s preflight %+v, want 200 naming %s", n.id, step, which, v, tc.rule)
				continue
			}
			r := v.SuspendedRules[0]
			if r.Name != tc.rule || r.Code != tc.code || r.Static != tc.static || r.Profile != tc.profile ||
				len(r.WouldDeny) != 1 || r.WouldDeny[0].Provider != "up-openai" || r.WouldDeny[0].Reason != tc.code {
				t.Errorf("%s %s: %s preflight names %+v, want %s (%s, static %v, profile %q) denying up-openai", n.id, step, which, r,
					tc.rule, tc.code, tc.static, tc.profile)
			}
		}
	}
}

// checkRuleStatus holds n's status to list tc's rule while it is
// suspended, with the requests it let through there, and not after.
func (c *testCluster) checkRuleStatus(t *testing.T, n *clusterNode, tc ruleCase, suspended bool) {
	t.Helper()
	var st struct {
		SuspendedRules []struct {
			Kind   string `json:"kind"`
			Name   string `json:"name"`
			Reason string `json:"reason"`
			Rules  []struct {
				Profile string `json:"profile"`
				Code    string `json:"code"`
				Static  bool   `json:"static"`
			} `json:"rules"`
			Lifted uint64 `json:"lifted"`
		} `json:"suspended_rules"`
	}
	if err := n.adminGet("/admin/v1/status", &st); err != nil {
		t.Fatal(err)
	}
	if !suspended {
		if len(st.SuspendedRules) != 0 {
			t.Errorf("%s: status lists %+v after the lift", n.id, st.SuspendedRules)
		}
		return
	}
	if len(st.SuspendedRules) != 1 {
		t.Fatalf("%s: status lists %+v, want %s", n.id, st.SuspendedRules, tc.rule)
	}
	s := st.SuspendedRules[0]
	if s.Kind != "rule" || s.Name != tc.rule || s.Reason != "e2e" || len(s.Rules) != 1 || s.Rules[0].Code != tc.code ||
		s.Rules[0].Static != tc.static || s.Rules[0].Profile != tc.profile || s.Lifted == 0 {
		t.Errorf("%s: status lists %+v, want %s (%s) with the requests it let through", n.id, s, tc.rule, tc.code)
	}
}
