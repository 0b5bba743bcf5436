// Package testkit holds the helpers the runtime's tests share, so each
// package's tests speak of what they test rather than of how to fake it.
package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
