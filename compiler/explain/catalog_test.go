package explain

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/runtime/bundle/bundletest"
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
	var rep CatalogReport
	if err := json.Unmarshal([]byte(js.String()), &rep); err != nil {
		t.Fatalf("json report does not parse: %v\n%s", err, js.String())
	}
	rows := rep.Channels
	if len(rows) != 4 || rows[2].Preserves != plan.Of(plan.CapExtendedThinking) || rows[2].VerifiedBy != bundletest.CompatDocs {
		t.Errorf("json rows = %+v", rows)
	}
	// The models and their routes, as the text form's table has them.
	var text2 strings.Builder
	writeModelRoutes(&printer{w: &text2}, g)
	if len(rep.Models) != len(g.Names) || len(rep.Models) == 0 {
		t.Fatalf("json models = %+v, want one per name of %v", rep.Models, g.Names)
	}
	served := 0
	for _, m := range rep.Models {
		want := "none (no profile is served it)"
		if len(m.Routes) > 0 {
			served++
			want = strings.Join(routeNames(m.Routes), ",")
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(m.Model) + ` +` + regexp.QuoteMeta(want) + `$`).MatchString(text2.String()) {
			t.Errorf("json model %+v is not the text table's:\n%s", m, text2.String())
		}
	}
	if served == 0 {
		t.Errorf("json models = %+v, want routes for some", rep.Models)
	}
	if rep.Unroutable == nil {
		t.Error("unroutable is null, want a list")
	}
	if !strings.Contains(js.String(), `"preserves": [`) {
		t.Errorf("preserves is not a list of names:\n%s", js.String())
	}

	if err := Catalog(&js, g, reportDay, "yaml"); err == nil || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("unknown format: err = %v", err)
	}
}

// TestCatalogFutureClaim: a claim dated after today is said to be in the
// future, not given a negative age.
func TestCatalogFutureClaim(t *testing.T) {
	g := bundletest.DefaultPolicy()
	g.Providers[0].Channels[1].VerifiedAt = reportDay.AddDate(0, 0, 90).Format(time.DateOnly)
	var text strings.Builder
	if err := Catalog(&text, g, reportDay, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "in the future") || strings.Contains(text.String(), "-90d") {
		t.Errorf("future claim:\n%s", text.String())
	}
}
