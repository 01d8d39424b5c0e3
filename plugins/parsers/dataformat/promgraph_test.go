package dataformat_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// TestLoadPrometheusGraphiteOptions: data_format "prometheus" and "graphite" are
// registered with Telegraf's keys, their problems come in one run with the input's, and
// their keys are refused under another format.
func TestLoadPrometheusGraphiteOptions(t *testing.T) {
	in, err := load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "prometheus"
  prometheus_metric_version = 1
  prometheus_ignore_timestamp = true`)
	require.NoError(t, err)
	require.Equal(t, dataformat.Prometheus{MetricVersion: 1, IgnoreTimestamp: true}, in.Prometheus)

	in, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "graphite"
  separator = "_"
  templates = ["servers.* .host.measurement*", "measurement.field region=eu"]`)
	require.NoError(t, err)
	require.Equal(t, dataformat.Graphite{Separator: "_", Templates: []string{"servers.* .host.measurement*", "measurement.field region=eu"}}, in.Graphite)

	_, err = load(t, `[[inputs.fmt]]
  data_format = "graphite"
  templates = ["a.b.c"]
  prometheus_metric_version = 3`)
	require.EqualError(t, err, ""+
		"t.conf:1: inputs.fmt.files: is required\n"+
		"t.conf:3: inputs.fmt.templates: template 1: no measurement specified for template. \"a.b.c\"\n"+
		"t.conf:4: inputs.fmt.prometheus_metric_version: is an option of data_format \"prometheus\", not of \"graphite\"")

	_, err = load(t, `[[inputs.fmt]]
  files = ["a"]
  data_format = "prometheus"
  prometheus_metric_version = 3`)
	require.EqualError(t, err, "t.conf:4: inputs.fmt.prometheus_metric_version: must be 1 or 2, not 3")
}

// TestPrometheusGraphiteKeepGoodEntries: both formats keep the entries around a bad one.
func TestPrometheusGraphiteKeepGoodEntries(t *testing.T) {
	got, err := parse(t, dataformat.Config{DataFormat: "prometheus"}, "# TYPE up gauge\nup 1 1000\nup{ 2\ndown 0 2000\n")
	require.Equal(t, []string{"prometheus up=1 1000000000", "prometheus down=0 2000000000"}, got)
	var pe *parsers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 3, pe.Entries[0].Line)

	got, err = parse(t, dataformat.Config{DataFormat: "graphite", Graphite: dataformat.Graphite{Templates: []string{"host.measurement.field"}}},
		"h1.cpu.idle 90 1\nbad\nh2.cpu.idle 80 2\n")
	require.Equal(t, []string{"cpu,host=h1 idle=90 1000000000", "cpu,host=h2 idle=80 2000000000"}, got)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Entries[0].Line)
}
