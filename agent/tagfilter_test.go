package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

// TestInputTagsPassTheInputsTagFilter pins what the README says of Telegraf's
// always_include_local_tags and always_include_global_tags: the input's tags and the global
// tags are added after the input's taginclude/tagexclude, so they always pass it, whatever
// the keys say; the keys only select what morse does anyway.
func TestInputTagsPassTheInputsTagFilter(t *testing.T) {
	for _, keys := range []string{"", "  always_include_local_tags = true\n  always_include_global_tags = true\n"} {
		ts := &testSinks{down: map[string]bool{}}
		cfg := loadTestConfig(t, ts.registry(t), `
[global_tags]
  dc = "eu"
[agent]
  omit_hostname = true
`+keys+`
[[inputs.seq]]
  taginclude = ["nothing"]
  [inputs.seq.tags]
    role = "db"
[[outputs.sink]]
`)
		a, err := NewAgent(cfg, AgentOptions{})
		require.NoError(t, err)
		var got []morse.Metric
		require.NoError(t, a.Test(context.Background(), func(m morse.Metric) { got = append(got, m) }))
		require.Len(t, got, 1)
		require.Equal(t, []morse.Tag{{Key: "dc", Value: "eu"}, {Key: "role", Value: "db"}}, got[0].Tags(),
			"the metric's own tag src is filtered out; the input's and the global tags stay")
	}
}
