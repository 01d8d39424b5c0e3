// Package sensors is the inputs.sensors plugin: it runs lm-sensors' `sensors -A -u` and
// reports each feature of each chip as a sensors metric tagged chip and feature, with the
// feature's values as float fields, parsed as Telegraf parses that output.
//
// remove_numbers (the default) strips the digits from field names, so that temp1_input
// and temp2_input are both temp_input. Unlike Telegraf, which refuses to start when
// `sensors` is not in PATH, morse looks it up at every gather: a missing lm-sensors is an
// error of the gather, and installing it needs no restart.
package sensors

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Monitor sensors, requires lm-sensors package"

//go:embed sample.conf
var sampleConfig string

// Sensors is the inputs.sensors plugin and its configuration. Build it with New.
type Sensors struct {
	// RemoveNumbers strips the digits from field names (temp1_input becomes temp_input).
	RemoveNumbers bool `toml:"remove_numbers"`
	// Timeout bounds a run of the sensors command.
	Timeout morse.Duration `toml:"timeout"`
}

var _ morse.Input = (*Sensors)(nil)

// New returns the plugin with Telegraf's defaults: remove_numbers on, a 5 s timeout.
func New() *Sensors { return &Sensors{RemoveNumbers: true, Timeout: morse.Duration(5 * time.Second)} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "sensors",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Gather runs `sensors -A -u` and reports its output.
func (s *Sensors) Gather(ctx context.Context, acc morse.Accumulator) error {
	path, err := exec.LookPath("sensors")
	if err != nil {
		return fmt.Errorf("sensors not found: verify that the lm-sensors package is installed and that sensors is in PATH: %w", err)
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.Timeout))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, path, "-A", "-u")
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timeout %s)", ctx.Err(), time.Duration(s.Timeout))
		}
		return fmt.Errorf("failed to run command %q: %w - %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return s.parse(out, acc, time.Now())
}

var digits = regexp.MustCompile("[0-9]+")

// parse reads the output: a chip's name, then for each feature a line naming it
// ("Core 0:") and its values indented by two spaces ("  temp2_input: 75.000"); a blank
// line ends the chip. A value that does not parse fails the gather, as in Telegraf.
func (s *Sensors) parse(out []byte, acc morse.Accumulator, now time.Time) error {
	var chip, feature string
	var fields map[string]any
	flush := func() {
		if len(fields) > 0 {
			tags := map[string]string{"chip": chip}
			if feature != "" {
				tags["feature"] = feature
			}
			acc.AddFields("sensors", fields, tags, now)
		}
		feature, fields = "", map[string]any{}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == "":
			flush()
			chip = ""
		case chip == "":
			chip, feature, fields = line, "", map[string]any{}
		case !strings.HasPrefix(line, "  "):
			flush()
			feature = strings.TrimRight(strings.ToLower(strings.ReplaceAll(strings.TrimSpace(line), " ", "_")), ":")
		default:
			name, value, ok := strings.Cut(line, ":")
			if !ok {
				return fmt.Errorf("a value line without a colon in the output of chip %q: %q", chip, line)
			}
			name = strings.TrimSpace(name)
			if s.RemoveNumbers {
				name = digits.ReplaceAllString(name, "")
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return fmt.Errorf("parsing %q of chip %q: %w", line, chip, err)
			}
			fields[name] = v
		}
	}
	flush()
	return nil
}
