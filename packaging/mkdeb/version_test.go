package main

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDebianVersion(t *testing.T) {
	tests := []struct {
		describe string
		commits  int
		want     string
		err      string
	}{
		{"v1.2.3", 10, "1.2.3", ""},
		{"1.2.3", 10, "1.2.3", ""},
		{"v1.2.3-dirty", 10, "1.2.3+dirty", ""},
		{"v1.2.3-rc1", 10, "1.2.3~rc1", ""},
		{"v1.2.3-beta.2", 10, "1.2.3~beta.2", ""},
		{"v1.2.3-5-gabc1234", 10, "1.2.3+git5.gabc1234", ""},
		{"v1.2.3-5-gabc1234-dirty", 10, "1.2.3+git5.gabc1234+dirty", ""},
		{"v1.2.3-rc1-5-gabc1234", 10, "1.2.3~rc1+git5.gabc1234", ""},
		{"abc1234", 55, "0.0.0+git55.gabc1234", ""},
		{"abc1234-dirty", 55, "0.0.0+git55.gabc1234+dirty", ""},
		{"abc1234", 0, "", "commit count"},
		{"release_one", 10, "", "not a version such as v1.2.3"},
		{"v1.2.3-rc_1", 10, "", "not a version such as v1.2.3"},
		{"", 10, "", "not a version"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			got, err := debianVersion(tt.describe, tt.commits)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestDebianVersionsSortAsBuilt: dpkg itself, not this package's idea of it, orders the
// versions of successive builds the way they were made, so each is an upgrade.
func TestDebianVersionsSortAsBuilt(t *testing.T) {
	builds := []struct {
		describe string
		commits  int
	}{
		{"abc1234", 9},
		{"abc1234-dirty", 9},
		{"def5678", 10},
		{"v0.9.0-rc1", 11},
		{"v0.9.0-rc1-1-g1111111", 12},
		{"v0.9.0", 13},
		{"v0.9.0-1-g2222222", 14},
		{"v0.9.0-2-g3333333", 15},
		{"v0.9.0-10-g4444444", 23},
		{"v0.9.1", 24},
		{"v1.0.0", 30},
	}
	prev := ""
	for _, b := range builds {
		v, err := debianVersion(b.describe, b.commits)
		require.NoError(t, err)
		if prev != "" {
			out, err := exec.Command("dpkg", "--compare-versions", prev, "lt", v).CombinedOutput()
			require.NoError(t, err, "dpkg says %s is not older than %s: %s", prev, v, out)
		}
		prev = v
	}
}
