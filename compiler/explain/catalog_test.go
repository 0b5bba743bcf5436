package explain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/plan"
)

var reportDay = time.Date(2027, 1, 15, 18, 30, 0, 0, time.UTC)

func TestCatalogRows(t *testing.T) {
	g := bundletest.DefaultPolicy()
	// A channel no plan uses is not routable.
	g.Providers[1].Channels = append(g.Providers[1].Channels, plan.Channel{Name: "idle", Dialect: plan.DialectOpenAI,
		Tier: plan.TierProviderCompat, VerifiedAt: "2026-01-01", VerifiedBy: "https://example.test"})
	rows := CatalogRows(g, reportDay)
	var names []string
	for _, r := range rows {
		name := r.Provider + "/" + r.Channel
		if r.Translation != plan.TranslateNone {
			name += "+" + string(r.Translation)
		}
		names = append(names, name)
	}
	// The translation row says what an OpenAI client keeps through the
	// Anthropic native channel.
	want := "fake-anthropic/native fake-anthropic/native+openai_anthropic fake-anthropic/openai-compat fake-openai/native"
	if strings.Join(names, " ") != want {
		t.Fatalf("rows %v, want %s", names, want)
	}
	if x := rows[1]; x.Dialect != plan.DialectOpenAI || x.Tier != plan.TierTranslation ||
		x.Preserves != plan.AllCaps&^plan.TranslationLosses[plan.TranslateOpenAIAnthropic] || x.VerifiedBy != plan.TranslationVerifiedBy {
		t.Errorf("translation row %+v", x)
	}
	compat := rows[2]
	if compat.AgeDays == nil || *compat.AgeDays != 56 {
		t.Errorf("age of a 2026-11-20 claim on 2027-01-15 = %v, want 56", compat.AgeDays)
	}
	if rows[0].AgeDays != nil {
		t.Errorf("native channel has an age: %d", *rows[0].AgeDays)
	}
	var text strings.Builder
	if err := Catalog(&text, g, reportDay, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "not routable by any plan: fake-openai/idle") {
		t.Errorf("text report does not name the idle channel:\n%s", text.String())
	}
}

func TestCatalogFormats(t *testing.T) {
	g := bundletest.DefaultPolicy()
	var text strings.Builder
	if err := Catalog(&text, g, reportDay, "text"); err != nil {
		t.Fatal(err)
	}
	golden(t, "catalog", text.String())

	var js strings.Builder
	if err := Catalog(&js, g, reportDay, "json"); err != nil {
		t.Fatal(err)
	}
	var rows []CatalogRow
	if err := json.Unmarshal([]byte(js.String()), &rows); err != nil {
		t.Fatalf("json report does not parse: %v\n%s", err, js.String())
	}
	if len(rows) != 4 || rows[2].Preserves != plan.Of(plan.CapExtendedThinking) || rows[2].VerifiedBy != bundletest.CompatDocs {
		t.Errorf("json rows = %+v", rows)
	}
	if !strings.Contains(js.String(), `"preserves": [`) {
		t.Errorf("preserves is not a list of names:\n%s", js.String())
	}

	if err := Catalog(&js, g, reportDay, "yaml"); err == nil || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("unknown format: err = %v", err)
	}
}
