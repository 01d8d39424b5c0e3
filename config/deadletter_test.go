package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTwoOutputsCannotShareADeadLetterFile: the second output that names a file, however
// spelled, is refused at its key, along with the config's other problems.
func TestTwoOutputsCannotShareADeadLetterFile(t *testing.T) {
	_, err := loadText(t, `
[[outputs.influxdb]]
  dead_letter_file = "/var/lib/morse/dead.lp"
[[outputs.file]]
  dead_letter_file = "/var/lib/morse/own.lp"
`, `
[[outputs.influxdb_v2]]
  alias = "second"

  dead_letter_file = "/var/lib/morse/../morse/dead.lp"
  dead_letter_max_size = -1
`)
	require.EqualError(t, err, `b.conf:5: outputs.influxdb_v2.dead_letter_file: "/var/lib/morse/../morse/dead.lp" is already `+
		`the dead_letter_file of outputs.influxdb (a.conf:2): give each output a file of its own`+"\n"+
		`b.conf:6: outputs.influxdb_v2.dead_letter_max_size: invalid size -1: must not be negative`)
}

func TestOutputsWithTheirOwnDeadLetterFiles(t *testing.T) {
	_, err := loadText(t, `
[[outputs.influxdb]]
  dead_letter_file = "dead-1.lp"
[[outputs.influxdb]]
  dead_letter_file = "dead-2.lp"
[[outputs.influxdb]]
`)
	require.NoError(t, err)
}
