package all_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/internal/testutil"
	_ "github.com/morse-agent/morse/plugins/all"
)

// The conformance suite runs over every plugin the binary registers, so a new plugin cannot
// ship without a description, a sample that the real loader accepts, valid defaults, and a
// clean start and stop.

// freePort rewrites a sample's listening addresses to port 0, so that the suite binds only
// ports the system chooses and never a fixed one.
var listenAddr = regexp.MustCompile(`((?:service_address|listen|server)\s*=\s*"[^"]*:)\d+"`)

func freePort(sample string) string { return listenAddr.ReplaceAllString(sample, `${1}0"`) }

func loadOne(t *testing.T, kind, name, sample string) *config.Config {
	t.Helper()
	require.Contains(t, sample, "[["+kind+"."+name+"]]", "the sample starts with the plugin's own header")
	cfg, err := config.Load(config.Options{
		Sources: []config.Source{{Name: kind + "." + name + "/sample.conf", Data: []byte(freePort(sample))}},
	})
	require.NoError(t, err, "the sample config loads through the real loader")
	return cfg
}

func TestEveryInputConforms(t *testing.T) {
	reg := morse.DefaultRegistry()
	names := reg.InputNames()
	require.NotEmpty(t, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			info, _ := reg.Input(name)
			require.NotEmpty(t, strings.TrimSpace(info.Description), "has a description")
			if v, ok := info.New().(morse.Validator); ok {
				require.NoError(t, v.Validate(), "the defaults are valid")
			}
			cfg := loadOne(t, "inputs", name, info.SampleConfig)
			require.Len(t, cfg.Inputs, 1)
			startStopInput(t, cfg.Inputs[0].Plugin)
		})
	}
}

// startStopInput initialises the input, starts a service input, gathers once and stops it,
// all within a bound: a plugin that hangs or panics here would hang or crash the agent.
func startStopInput(t *testing.T, in morse.Input) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if i, ok := in.(morse.Initializer); ok {
		require.NoError(t, i.Init(), "Init with the sample's settings")
	}
	acc := &testutil.Accumulator{}
	if s, ok := in.(morse.ServiceInput); ok {
		require.NoError(t, s.Start(ctx, acc), "Start with the sample's settings")
		defer s.Stop()
	}
	done := make(chan error, 1)
	go func() { done <- in.Gather(ctx, acc) }()
	select {
	case <-done: // a gather error is the plugin's to report, not a conformance failure
	case <-ctx.Done():
		t.Fatal("Gather did not return within 30s")
	}
}

func TestEveryOutputConforms(t *testing.T) {
	reg := morse.DefaultRegistry()
	names := reg.OutputNames()
	require.NotEmpty(t, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			info, _ := reg.Output(name)
			require.NotEmpty(t, strings.TrimSpace(info.Description), "has a description")
			if v, ok := info.New().(morse.Validator); ok {
				require.NoError(t, v.Validate(), "the defaults are valid")
			}
			cfg := loadOne(t, "outputs", name, info.SampleConfig)
			require.Len(t, cfg.Outputs, 1)
			out := cfg.Outputs[0].Plugin
			if i, ok := out.(morse.Initializer); ok {
				require.NoError(t, i.Init())
			}
			// A cancelled context lets Connect show it returns promptly without sending
			// anything to a server that the sample names but this machine does not run.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			closed := make(chan error, 1)
			go func() {
				_ = out.Connect(ctx)
				closed <- out.Close()
			}()
			select {
			case err := <-closed:
				require.NoError(t, err, "Close after Connect")
			case <-time.After(10 * time.Second):
				t.Fatal("Connect or Close did not return within 10s of a cancelled context")
			}
		})
	}
}

func TestFullSampleConfigLoads(t *testing.T) {
	_, err := config.Load(config.Options{
		Sources: []config.Source{{Name: "morse config", Data: []byte(freePort(config.SampleConfig(nil, nil, nil)))}},
	})
	require.NoError(t, err, "`morse config` prints a config the loader accepts as a whole")
}
