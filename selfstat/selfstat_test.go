package selfstat

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSeriesOfEqualTagsStaySeparate(t *testing.T) {
	r := New()
	a := r.NewSeries("internal_write", map[string]string{"output": "sink"})
	b := r.NewSeries("internal_write", map[string]string{"output": "sink"})
	a.Counter("metrics_written").Add(3)
	b.Counter("metrics_written").Add(5)
	snap := r.Snapshot()
	require.Len(t, snap, 2)
	require.Equal(t, int64(3), snap[0].Fields[0].Value)
	require.Equal(t, int64(5), snap[1].Fields[0].Value)
}

func TestSharedCounterAliasAndRemove(t *testing.T) {
	r := New()
	c := r.Counter("internal_agent", nil, "metrics_gathered")
	require.Same(t, c, r.Counter("internal_agent", nil, "metrics_gathered"), "shared series are looked up, not duplicated")
	s := r.NewSeries("internal_write", map[string]string{"output": "x", "alias": "a"})
	errs := s.Counter("errors")
	s.Alias("write_errors", errs)
	errs.Add(2)
	snap := r.Snapshot()
	require.Equal(t, []Tag{{"alias", "a"}, {"output", "x"}}, snap[1].Tags, "tags are sorted")
	require.Equal(t, []Field{{"errors", 2}, {"write_errors", 2}}, snap[1].Fields)
	r.Remove(s)
	require.Len(t, r.Snapshot(), 1)
}

func TestCountersAreSafeForConcurrentUse(t *testing.T) {
	r := New()
	c := r.Counter("m", nil, "n")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				c.Incr()
				_ = r.Snapshot()
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(8000), c.Get())
}
