package snmp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompareIndexOrdersByNumber(t *testing.T) {
	ordered := []string{"", ".1", ".1.2", ".1.10", ".2", ".9", ".10", ".10.1", ".100"}
	for i := range ordered {
		for j := range ordered {
			got := compareIndex(ordered[i], ordered[j])
			switch {
			case i < j:
				require.Negative(t, got, "%s < %s", ordered[i], ordered[j])
			case i > j:
				require.Positive(t, got, "%s > %s", ordered[i], ordered[j])
			default:
				require.Zero(t, got)
			}
		}
	}
}

func TestFieldIndex(t *testing.T) {
	f := Field{OidIndexSuffix: ".5"}
	idx, ok := f.index(".3.5")
	require.True(t, ok)
	require.Equal(t, ".3", idx)
	_, ok = f.index(".3.15")
	require.False(t, ok)
	f = Field{OidIndexLength: 2}
	idx, _ = f.index(".1.2.3.4")
	require.Equal(t, ".1.2", idx)
	idx, _ = f.index(".1")
	require.Equal(t, ".1", idx)
}
