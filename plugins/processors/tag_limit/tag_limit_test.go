package tag_limit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &TagLimit{} })
}

func TestValidate(t *testing.T) {
	require.ErrorContains(t, (&TagLimit{Limit: 1, Keep: []string{"a", "b"}}).Validate(), "keep: lists 2 tags, more than the limit of 1")
	require.ErrorContains(t, (&TagLimit{Limit: -1}).Validate(), "limit: must not be negative")
	require.NoError(t, (&TagLimit{Limit: 2, Keep: []string{"a", "b"}}).Validate())
}

func BenchmarkTagLimit(b *testing.B) {
	p := &TagLimit{Limit: 3, Keep: []string{"environment", "region"}}
	ms := testutil.Parse(b, "throughput,month=Jun,environment=qa,region=us-east1,lower=10i,upper=1000i v=1 1560540094000000000\n", false)
	testutil.BenchProcessor(b, p, ms)
}
