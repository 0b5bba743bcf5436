// Package testkit holds the helpers the runtime's tests share, so each
// package's tests speak of what they test rather than of how to fake it.
package testkit

import (
	"io"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Counter sums the samples of counter name whose labels include labels
// (0 when there are none). A label the counter lacks matches no sample, so
// a misspelt one is not read as a wildcard.
func Counter(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range samples(t, reg, name, labels) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// Gauge sums the samples of gauge name whose labels include labels, as
// Counter does; with every label given it reads the one sample.
func Gauge(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range samples(t, reg, name, labels) {
		sum += m.GetGauge().GetValue()
	}
	return sum
}

// samples gathers reg and returns the samples of name whose labels include
// every one of labels.
func samples(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) []*dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok {
					if v != lp.GetValue() {
						matched = -1
						break
					}
					matched++
				}
			}
			if matched == len(labels) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Scrape parses a Prometheus text exposition, as a scraper reads it: the
// families by name.
func Scrape(t testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return fams
}

// Series returns the one sample of family name in fams whose labels are
// exactly labels; it fails the test when there is none.
func Series(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("scrape has no %s", name)
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		same := true
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				same = false
				break
			}
		}
		if same {
			return m
		}
	}
	t.Fatalf("scrape has no %s%v; it has %v", name, labels, f.GetMetric())
	return nil
}

// Bounds lists a histogram's bucket upper bounds, without +Inf.
func Bounds(h *dto.Histogram) []float64 {
	var out []float64
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b.GetUpperBound())
		}
	}
	return out
}

// WithLabel is labels and k=v, a new map.
func WithLabel(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}
