package systemd_units //nolint:revive // the package is named as the plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/coreos/go-systemd/v22/dbus"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// gather runs the plugin configured by config against the recorded answers.
func gather(t *testing.T, config string, r *replay) (*testutil.Accumulator, error) {
	t.Helper()
	s := New()
	_, err := toml.Decode(config, s)
	require.NoError(t, err)
	require.NoError(t, s.Validate())
	require.NoError(t, s.Init())
	s.Connect = func(context.Context) (Client, error) { return r, nil }
	acc := &testutil.Accumulator{}
	require.NoError(t, s.Start(context.Background(), acc))
	defer s.Stop()
	return acc, s.Gather(context.Background(), acc)
}

// lines returns each metric as "name load active sub load_code active_code sub_code",
// the codes printed with their Go types.
func lines(acc *testutil.Accumulator) []string {
	var out []string
	for _, m := range acc.MetricsNamed("systemd_units") {
		tg, f := testutil.TagsOf(m), testutil.FieldsOf(m)
		out = append(out, fmt.Sprintf("%s %s %s %s %T:%v %T:%v %T:%#x", tg["name"], tg["load"], tg["active"], tg["sub"],
			f["load_code"], f["load_code"], f["active_code"], f["active_code"], f["sub_code"], f["sub_code"]))
	}
	return out
}

func TestLoadedUnits(t *testing.T) {
	r := &replay{t: t}
	acc, err := gather(t, `pattern = "morse-test*"`, r)
	require.NoError(t, err)
	require.Empty(t, acc.Errors())
	require.Equal(t, []string{
		"morse-test-oneshot.service loaded active exited int64:0 int64:0 int64:0x4",
		"morse-test-sleep.service loaded active running int64:0 int64:0 int64:0x0",
		"morse-test-fail.service loaded failed failed int64:0 int64:3 int64:0xc",
		"morse-test-tpl@one.service loaded active running int64:0 int64:0 int64:0x0",
	}, lines(acc))
	require.Equal(t, []string{"ListUnits"}, r.calls)
	require.True(t, r.closed, "Stop closes the connection")

	acc, err = gather(t, `unittype = "mount"`+"\n"+`pattern = "dev-* sys-*"`, &replay{t: t})
	require.NoError(t, err)
	require.Contains(t, lines(acc), "dev-hugepages.mount loaded active mounted int64:0 int64:0 int64:0x32")
	for _, l := range lines(acc) {
		require.Regexp(t, `^(dev|sys)-\S+\.mount `, l)
	}
}

func TestDisabledAndStaticUnits(t *testing.T) {
	r := &replay{t: t}
	acc, err := gather(t, "pattern = \"morse-test*\"\ncollect_disabled_units = true", r)
	require.NoError(t, err)
	require.Equal(t, []string{
		"morse-test-oneshot.service loaded active exited int64:0 int64:0 int64:0x4",
		"morse-test-sleep.service loaded active running int64:0 int64:0 int64:0x0",
		"morse-test-fail.service loaded failed failed int64:0 int64:3 int64:0xc",
		"morse-test-tpl@one.service loaded active running int64:0 int64:0 int64:0x0",
		"morse-test-disabled.service loaded inactive dead int64:0 int64:2 int64:0x1",
		"morse-test-static.service stub inactive dead int64:1 int64:2 int64:0x1",
	}, lines(acc), "a loaded static unit and the template of a loaded instance are not repeated")
	require.Equal(t, []string{"ListUnits", "ListUnitFilesByPatterns [enabled disabled static] [morse-test*]",
		"ListUnitsByNames [morse-test-disabled.service]"}, r.calls)
}

func TestDetails(t *testing.T) {
	r := &replay{t: t}
	acc, err := gather(t, "pattern = \"morse-test-sleep.service morse-test-fail.service\"\ndetails = true", r)
	require.NoError(t, err)
	ms := acc.MetricsNamed("systemd_units")
	require.Len(t, ms, 2)
	require.Equal(t, map[string]string{"name": "morse-test-sleep.service", "load": "loaded", "active": "active",
		"sub": "running", "state": "disabled", "preset": "enabled"}, testutil.TagsOf(ms[0]))
	require.Equal(t, map[string]any{"load_code": int64(0), "active_code": int64(0), "sub_code": int64(0),
		"status_errno": int64(0), "restarts": uint64(0), "pid": uint64(90),
		"mem_current": uint64(229376), "mem_peak": uint64(0), "mem_avail": uint64(0), "swap_current": uint64(0), "swap_peak": uint64(0),
		"active_enter_timestamp_us": uint64(1795828931730363)}, testutil.FieldsOf(ms[0]),
		"MemoryAvailable's 'unknown' and the properties systemd 252 lacks are 0, as in Telegraf")
	require.Equal(t, map[string]string{"name": "morse-test-fail.service", "load": "loaded", "active": "failed",
		"sub": "failed", "state": "static", "preset": "enabled"}, testutil.TagsOf(ms[1]))
	require.Equal(t, uint64(0), testutil.FieldsOf(ms[1])["pid"])
}

func TestUnknownStateAndLostConnection(t *testing.T) {
	r := &replay{t: t, edit: func(units []dbus.UnitStatus) []dbus.UnitStatus {
		for i := range units {
			if units[i].Name == "morse-test-fail.service" {
				units[i].SubState = "exploded"
			}
		}
		return units
	}}
	acc, err := gather(t, `pattern = "morse-test*"`, r)
	require.NoError(t, err)
	require.Len(t, acc.Errors(), 1)
	require.EqualError(t, acc.Errors()[0], "parsing field 'sub' failed, value not in map: exploded")
	require.Len(t, lines(acc), 3, "the others are reported")

	// A connection that breaks is replaced at the next gather; one that cannot be opened
	// fails that gather.
	s := New()
	require.NoError(t, s.Init())
	first, second := &replay{t: t}, &replay{t: t}
	conns := []Client{first, second}
	s.Connect = func(context.Context) (Client, error) {
		if len(conns) == 0 {
			return nil, errors.New("no bus")
		}
		c := conns[0]
		conns = conns[1:]
		return c, nil
	}
	acc = &testutil.Accumulator{}
	require.NoError(t, s.Gather(context.Background(), acc))
	first.broken = true
	require.NoError(t, s.Gather(context.Background(), acc))
	require.True(t, first.closed)
	require.Equal(t, []string{"ListUnits"}, second.calls)
	second.broken = true
	require.ErrorContains(t, s.Gather(context.Background(), acc), "connecting to the systemd manager (system scope): no bus")
	s.Stop()
}

func TestOptions(t *testing.T) {
	err := (&SystemdUnits{UnitType: "services", Scope: "session", Pattern: "a[ b"}).Validate()
	require.ErrorContains(t, err, `unittype: invalid "services"`)
	require.ErrorContains(t, err, `scope: invalid "session"`)
	require.ErrorContains(t, err, "pattern:")
	s := New()
	require.NoError(t, s.Init())
	require.Equal(t, "*", s.Pattern)
	require.Equal(t, "service", s.UnitType)
	require.Equal(t, "Service", s.dbusType)
}
