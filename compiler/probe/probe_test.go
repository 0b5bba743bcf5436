package probe_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/probe"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/runtime/plan"
)

const secret = "sk-probe-upstream"

// env is the environment the probe reads the credential from.
func env(name string) (string, bool) {
	if name == testkit.ProbeCredentialEnv {
		return secret, true
	}
	return "", false
}

// target compiles p and resolves its vendor/compat channel.
func target(t *testing.T, p testkit.Policy, model string) *probe.Target {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), p.Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, p.Source())
	}
	tg, err := probe.NewTarget(g, "vendor", "compat", model, env, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// run probes a fake of dialect dropping drops through a channel claiming
// keeps.
func run(t *testing.T, dialect fakeprovider.Dialect, drops plan.CapSet, keeps ...string) (*probe.Target, *probe.Report, *fakeprovider.Server) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: dialect, Key: secret, Drops: fakeprovider.Drops(drops)})
	tg := target(t, testkit.ProbePolicy(string(dialect), base, keeps...), "")
	r, err := tg.Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return tg, r, s
}

// TestSendsAsPistradWould: every call goes to the channel's URL for its
// route with the channel's credential in its dialect's header, the model a
// plan sends there, and the bodies of the plan printed before it; an
// Anthropic channel that sets no version gets one.
func TestSendsAsPistradWould(t *testing.T) {
	for _, tt := range []struct {
		dialect            fakeprovider.Dialect
		header, credential string
		paths              []string
	}{
		{fakeprovider.DialectOpenAI, "Authorization", "Bearer " + secret, []string{"/v1/chat/completions", "/v1/responses"}},
		{fakeprovider.DialectAnthropic, "X-Api-Key", secret, []string{"/v1/messages"}},
	} {
		t.Run(string(tt.dialect), func(t *testing.T) {
			tg, _, s := run(t, tt.dialect, 0)
			calls, got := tg.Calls(), s.Requests()
			if len(got) != len(calls) {
				t.Fatalf("%d requests, want the %d calls planned", len(got), len(calls))
			}
			for i, rec := range got {
				if !slices.Contains(tt.paths, rec.Path) || rec.Header.Get(tt.header) != tt.credential || rec.Model != "vendor-large" ||
					string(rec.Body) != string(calls[i].Body) {
					t.Errorf("request %d: %s %s=%q model %q: want call %q on %v with the credential", i, rec.Path, tt.header,
						rec.Header.Get(tt.header), rec.Model, calls[i].Name, tt.paths)
				}
				if tt.dialect == fakeprovider.DialectAnthropic && rec.Header.Get("Anthropic-Version") != "2023-06-01" {
					t.Errorf("request %d: anthropic-version %q", i, rec.Header.Get("Anthropic-Version"))
				}
			}
		})
	}
}

// TestCallsAreBounded: a fixed number of calls, the baseline first, with
// estimates that add up to what the plan prints.
func TestCallsAreBounded(t *testing.T) {
	for dialect, want := range map[fakeprovider.Dialect]int{fakeprovider.DialectOpenAI: 9, fakeprovider.DialectAnthropic: 6} {
		tg := target(t, testkit.ProbePolicy(string(dialect), "http://127.0.0.1:1/v1"), "")
		calls := tg.Calls()
		if len(calls) != want || calls[0].Name != "baseline" {
			t.Errorf("%s: %d calls starting with %q, want %d starting with the baseline", dialect, len(calls), calls[0].Name, want)
		}
		for _, c := range calls {
			if c.InputTokens() <= 0 || c.InputTokens() > 5000 || c.MaxOutput > 2048 {
				t.Errorf("%s: call %s estimates %d in, %d out", dialect, c.Name, c.InputTokens(), c.MaxOutput)
			}
		}
	}
}

// TestHonouredInFull: a fake that drops nothing is seen to honour every
// capability its dialect can ask for, and the route it serves answers.
func TestHonouredInFull(t *testing.T) {
	for dialect, want := range map[fakeprovider.Dialect]plan.CapSet{
		fakeprovider.DialectOpenAI:    plan.AllCaps,
		fakeprovider.DialectAnthropic: plan.AllCaps &^ plan.Of(plan.CapAudioInput, plan.CapMultiChoice),
	} {
		_, r, _ := run(t, dialect, 0, "strict_tools")
		if got := r.Preserves(); got != want {
			for _, f := range r.Findings {
				t.Logf("%s: %s", f.Cap, f.Evidence)
			}
			t.Errorf("%s: preserves %v, want %v", dialect, got, want)
		}
		if len(r.Regressions(plan.AllCaps)) != 0 {
			t.Errorf("%s: regressions %v", dialect, r.Regressions(plan.AllCaps))
		}
		for _, rf := range r.Routes {
			if !rf.Answered {
				t.Errorf("%s: route %s: %s", dialect, rf.Route, rf.Evidence)
			}
		}
	}
}

// TestRouteNotServed: Anthropic's OpenAI-compatible layer answers chat
// completions only; the responses route its channel declares does not
// answer (the fake's Anthropic API refuses it before routing it), and the
// capabilities it drops are all dropped.
func TestRouteNotServed(t *testing.T) {
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: secret})
	tg := target(t, testkit.ProbePolicy("openai", base), "claude-haiku-4-5")
	r, err := tg.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Routes) != 1 || r.Routes[0].Route != plan.RouteResponses || r.Routes[0].Answered || !strings.Contains(r.Routes[0].Evidence, "refused with 400") {
		t.Errorf("routes %+v: want responses refused", r.Routes)
	}
	if r.Preserves() != 0 {
		t.Errorf("preserves %v: the compatible layer drops everything", r.Preserves())
	}
	if got := s.Requests()[0].Model; got != "claude-haiku-4-5" {
		t.Errorf("model %q, want -model's", got)
	}
}

// TestOutageIsNoVerdict: an endpoint answering 503, or 429, shows nothing
// about its capabilities: the run ends with an error and no report.
func TestOutageIsNoVerdict(t *testing.T) {
	for _, status := range []int{503, 429} {
		_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secret,
			Faults: fakeprovider.Faults{FailStatus: status, FailCount: 3}})
		tg := target(t, testkit.ProbePolicy("openai", base), "")
		r, err := tg.Run(context.Background())
		if err == nil || r != nil || !strings.Contains(err.Error(), "could not be probed") {
			t.Errorf("%d: report %v, error %v: want no verdict", status, r, err)
		}
	}
}

// TestRefusedBaselineIsNoVerdict: a wrong credential refuses the plain
// request, and with it every judgement.
func TestRefusedBaselineIsNoVerdict(t *testing.T) {
	_, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: "sk-another"})
	r, err := target(t, testkit.ProbePolicy("openai", base), "").Run(context.Background())
	if err == nil || r != nil || !strings.Contains(err.Error(), "refused with 401") {
		t.Errorf("report %v, error %v: want the baseline's 401", r, err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error %v carries the credential", err)
	}
}

// TestNotProbeable: a native channel, an unknown channel and a missing
// credential are refused before any call.
func TestNotProbeable(t *testing.T) {
	p := testkit.ProbePolicy("openai", "http://127.0.0.1:1/v1")
	p.Providers["vendor"].Channels["native"] = testkit.Channel{Dialect: "openai", Tier: "native"}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.cue"), p.Source(), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	for _, tt := range []struct {
		channel string
		env     func(string) (string, bool)
		want    string
	}{
		{"native", env, "keeps every capability"},
		{"missing", env, `no channel "missing"`},
		{"compat", noEnv, testkit.ProbeCredentialEnv},
	} {
		if _, err := probe.NewTarget(g, "vendor", tt.channel, "", tt.env, time.Second); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.channel, err, tt.want)
		}
	}
}
