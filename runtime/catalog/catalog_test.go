package catalog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/translate"
)

var reportDay = time.Date(2027, 1, 15, 18, 30, 0, 0, time.UTC)

// idleGraph is bundletest.DefaultPolicy with a channel no plan uses.
func idleGraph() *plan.Graph {
	g := bundletest.DefaultPolicy()
	g.Providers[1].Channels = append(g.Providers[1].Channels, plan.Channel{Name: "idle", Dialect: plan.DialectOpenAI,
		Tier: plan.TierProviderCompat, VerifiedAt: "2026-01-01", VerifiedBy: "https://example.test"})
	return g
}

func TestRows(t *testing.T) {
	rows := Rows(idleGraph(), reportDay)
	var names []string
	for _, r := range rows {
		name := r.Provider + "/" + r.Channel
		if r.Translation != plan.TranslateNone {
			name += "+" + string(r.Translation)
		}
		names = append(names, name)
	}
	// A channel no plan uses is not routable. The translation row says what
	// an OpenAI client keeps through the Anthropic native channel.
	want := "fake-anthropic/native fake-anthropic/native+openai_anthropic fake-anthropic/openai-compat fake-openai/native"
	if strings.Join(names, " ") != want {
		t.Fatalf("rows %v, want %s", names, want)
	}
	if x := rows[1]; x.Dialect != plan.DialectOpenAI || x.Tier != plan.TierTranslation ||
		x.Preserves != plan.AllCaps&^plan.TranslationLosses[plan.TranslateOpenAIAnthropic] || x.VerifiedBy != translate.Claim(plan.TranslateOpenAIAnthropic) {
		t.Errorf("translation row %+v", x)
	}
	compat := rows[2]
	if compat.AgeDays == nil || *compat.AgeDays != 56 {
		t.Errorf("age of a 2026-11-20 claim on 2027-01-15 = %v, want 56", compat.AgeDays)
	}
	if rows[0].AgeDays != nil {
		t.Errorf("native channel has an age: %d", *rows[0].AgeDays)
	}
}

func TestUnroutable(t *testing.T) {
	if got := Unroutable(idleGraph()); !slices.Equal(got, []string{"fake-openai/idle"}) {
		t.Errorf("Unroutable = %q, want [fake-openai/idle]", got)
	}
	if got := Unroutable(bundletest.DefaultPolicy()); got != nil {
		t.Errorf("every channel of bundletest.DefaultPolicy is routable; Unroutable = %q", got)
	}
}

// TestRowsOverrode: a row carries the claims its channel's won over, in
// the graph's order, each aged like the winner.
func TestRowsOverrode(t *testing.T) {
	g := bundletest.DefaultPolicy()
	lost := []plan.Claim{
		{Preserves: plan.Of(plan.CapStrictTools), Origin: "overlay:manual", VerifiedAt: "2027-01-10", VerifiedBy: "https://example.test/a"},
		{Preserves: 0, Origin: "preset:anthropic_compat", VerifiedAt: "2026-11-20", VerifiedBy: "https://example.test/b"},
	}
	g.Providers[0].Channels[1].Overrode = lost
	var row *Row
	for _, r := range Rows(g, reportDay) {
		if r.Provider == g.Providers[0].Name && r.Channel == g.Providers[0].Channels[1].Name && r.Translation == plan.TranslateNone {
			row = &r
		}
	}
	if row == nil || len(row.Overrode) != 2 {
		t.Fatalf("row %+v, want the two claims it overrode", row)
	}
	for i, want := range []int{5, 56} {
		if o := row.Overrode[i]; o.Claim != lost[i] || o.AgeDays == nil || *o.AgeDays != want {
			t.Errorf("overrode[%d] = %+v (age %v), want %+v aged %dd", i, o.Claim, o.AgeDays, lost[i], want)
		}
	}
}
