package prometheus

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

// tagMap is a metric's tags without url.
func tagMap(m morse.Metric) map[string]string {
	tags := map[string]string{}
	for _, tg := range m.Tags() {
		if tg.Key != "url" {
			tags[tg.Key] = tg.Value
		}
	}
	return tags
}

// TestMetricVersionShapes scrapes the real node_exporter in both metric versions and checks
// each metric's shape against the exporter's own text exposition, read independently of
// morse's parser. Version 1: a measurement per family, the labels as tags, the field
// counter, gauge or value, and for the go_gc_duration_seconds summary one metric per label
// set with count, sum and a field per quantile. Version 2: the measurement prometheus, a
// field per sample named after it, the labels (quantile included) as tags. A gauge that
// stays put between two scrapes (node_memory_MemTotal_bytes) has the exporter's value.
func TestMetricVersionShapes(t *testing.T) {
	node := testserver.SharedNodeExporter(t)
	exp := fetchText(t, node.URL())
	require.Equal(t, "summary", exp.types["go_gc_duration_seconds"])
	memTotal := -1.0
	for _, s := range exp.samples {
		if s.name == "node_memory_MemTotal_bytes" {
			memTotal = s.value
		}
	}
	require.Positive(t, memTotal)

	t.Run("v1", func(t *testing.T) {
		ms, errs := gather(t, `urls = ["`+node.URL()+`"]`)
		require.Empty(t, errs)
		got := map[string][]string{}
		for _, m := range ms {
			k := key(m.Name(), tagMap(m))
			require.NotContains(t, got, k, "one metric per family and label set")
			for _, f := range m.Fields() {
				got[k] = append(got[k], f.Key)
			}
			sort.Strings(got[k])
			if m.Name() == "node_memory_MemTotal_bytes" {
				v, ok := m.Field("gauge")
				require.True(t, ok)
				require.Equal(t, memTotal, v.Float())
			}
		}
		require.Equal(t, exp.shapesV1(), got)
		require.Equal(t, []string{"0", "0.25", "0.5", "0.75", "1", "count", "sum"}, got["go_gc_duration_seconds{}"])
	})
	t.Run("v2", func(t *testing.T) {
		ms, errs := gather(t, `urls = ["`+node.URL()+`"]
metric_version = 2`)
		require.Empty(t, errs)
		want := map[string]bool{}
		for _, s := range exp.samples {
			want[key(s.name, s.labels)] = true
		}
		got := map[string]bool{}
		for _, m := range ms {
			require.Equal(t, "prometheus", m.Name())
			for _, f := range m.Fields() {
				k := key(f.Key, tagMap(m))
				require.False(t, got[k], "one field per sample: %s", k)
				got[k] = true
				if f.Key == "node_memory_MemTotal_bytes" {
					require.Equal(t, memTotal, f.Value.Float())
				}
			}
		}
		require.Equal(t, want, got)
	})
}
