package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
)

// The default config is `morse config` narrowed to this host's system inputs and morse's
// own metrics, with one output: the file output, appending line protocol to a file in the
// service's state directory. A file, because it needs no database and proves at once that
// the service gathers (`tail /var/lib/morse/metrics.out`), and a file, not stdout, because
// stdout is the journal under systemd: metrics there would bury morse's own messages and
// grow the journal by every gather. /etc/logrotate.d/morse bounds the file.
const (
	defaultInputs  = "cpu:mem:disk:diskio:net:system:kernel:processes:swap:internal"
	defaultOutputs = "file"
	sampleFiles    = `  files = ["stdout"]`
	defaultFiles   = `  files = ["/var/lib/morse/metrics.out"]`
)

const defaultConfigHeader = `# /etc/morse/morse.conf: the config the morse service runs. It gathers this host's system
# metrics every 10 seconds and appends them, as InfluxDB line protocol, to
# /var/lib/morse/metrics.out. To send them to a database instead, replace [[outputs.file]]
# with an output from ` + "`morse config --output-filter influxdb`" + `, then run
# ` + "`systemctl reload morse`" + `. Files named *.conf in /etc/morse/morse.d/ are merged with
# this one. See /usr/share/doc/morse/service.md.
#
`

// defaultConfig runs the binary being packaged for its sample config, so the package's
// config always matches what that binary accepts, and points the file output at the state
// directory.
func defaultConfig(ctx context.Context, binary string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, "config", "--input-filter", defaultInputs, "--output-filter", defaultOutputs)
	cmd.Stderr = &stderr
	sample, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s config: %w: %s", binary, err, stderr.String())
	}
	if n := bytes.Count(sample, []byte(sampleFiles+"\n")); n != 1 {
		return nil, fmt.Errorf("%s config: expected the file output's %q once, found it %d times", binary, sampleFiles, n)
	}
	conf := bytes.Replace(sample, []byte(sampleFiles+"\n"), []byte(defaultFiles+"\n"), 1)
	return append([]byte(defaultConfigHeader), conf...), nil
}
