// Package testkit holds the helpers the runtime's tests share, so each
// package's tests speak of what they test rather than of how to fake it.
package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter sums the samples of counter name whose labels include labels
// (0 when there are none). A label the counter lacks matches no sample, so
// a misspelt one is not read as a wildcard.
func Counter(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
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
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// Gauge reads the sample of gauge name whose labels include labels, or 0
// when there is none.
func Gauge(t testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
