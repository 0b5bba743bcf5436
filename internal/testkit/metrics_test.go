package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hits_total"}, []string{"a", "b"})
	reg.MustRegister(c)
	c.WithLabelValues("x", "1").Add(2)
	c.WithLabelValues("x", "2").Add(3)
	c.WithLabelValues("y", "1").Add(5)
	for _, tt := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"a": "x", "b": "1"}, 2},
		{map[string]string{"a": "x"}, 5},
		{nil, 10},
		{map[string]string{"a": "z"}, 0},
		{map[string]string{"a": "x", "c": "1"}, 0}, // no such label
	} {
		if got := Counter(t, reg, "hits_total", tt.labels); got != tt.want {
			t.Errorf("Counter(%v) = %v, want %v", tt.labels, got, tt.want)
		}
	}
}
