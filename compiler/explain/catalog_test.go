package explain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
	"github.com/pistra/pistra/runtime/catalog"
	"github.com/pistra/pistra/runtime/plan"
)

var reportDay = time.Date(2027, 1, 15, 18, 30, 0, 0, time.UTC)

// The rows themselves are tested in runtime/catalog; the text report adds
// the channels no plan can reach.
func TestCatalogTextNamesUnroutable(t *testing.T) {
	g := bundletest.DefaultPolicy()
	g.Providers[1].Channels = append(g.Providers[1].Channels, plan.Channel{Name: "idle", Dialect: plan.DialectOpenAI,
		Tier: plan.TierProviderCompat, VerifiedAt: "2026-01-01", VerifiedBy: "https://example.test"})
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
	var rows []catalog.Row
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
