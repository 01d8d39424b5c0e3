package systemd_units //nolint:revive // the package is named as the plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/require"
)

// replay is a Client that answers with the systemd 252 manager's answers recorded by
// testdata/capture.sh (busctl's JSON), and records what it was asked. The real manager is
// asked by internal/systemdtest's TestSystemdUnits; these answers let the unit tests check
// the cases it cannot make on demand: a state the codes do not know, a lost connection.
type replay struct {
	t      *testing.T
	closed bool
	broken bool
	calls  []string
	// edit, when set, changes the loaded units before they are returned.
	edit func([]dbus.UnitStatus) []dbus.UnitStatus
}

// busctlJSON is busctl --json=short's form of a method's answer.
type busctlJSON struct {
	Type string            `json:"type"`
	Data []json.RawMessage `json:"data"`
}

func (r *replay) load(name string) json.RawMessage {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dbus", name))
	require.NoError(r.t, err)
	var v busctlJSON
	require.NoError(r.t, json.Unmarshal(b, &v))
	require.Len(r.t, v.Data, 1)
	return v.Data[0]
}

func (r *replay) statuses(name string) []dbus.UnitStatus {
	var rows [][]any
	require.NoError(r.t, json.Unmarshal(r.load(name), &rows))
	out := make([]dbus.UnitStatus, 0, len(rows))
	for _, row := range rows {
		require.Len(r.t, row, 10, "a(ssssssouso)")
		s := func(i int) string { return row[i].(string) }
		out = append(out, dbus.UnitStatus{Name: s(0), Description: s(1), LoadState: s(2), ActiveState: s(3), SubState: s(4),
			Followed: s(5), Path: godbus.ObjectPath(s(6)), JobId: uint32(row[7].(float64)), JobType: s(8), JobPath: godbus.ObjectPath(s(9))})
	}
	return out
}

func (r *replay) Connected() bool { return !r.closed && !r.broken }
func (r *replay) Close()          { r.closed = true }

func (r *replay) ListUnitsContext(context.Context) ([]dbus.UnitStatus, error) {
	r.calls = append(r.calls, "ListUnits")
	units := r.statuses("ListUnits.json")
	if r.edit != nil {
		units = r.edit(units)
	}
	return units, nil
}

func (r *replay) ListUnitFilesByPatternsContext(_ context.Context, states, patterns []string) ([]dbus.UnitFile, error) {
	r.calls = append(r.calls, fmt.Sprintf("ListUnitFilesByPatterns %v %v", states, patterns))
	var rows [][2]string
	require.NoError(r.t, json.Unmarshal(r.load("ListUnitFilesByPatterns.json"), &rows))
	out := make([]dbus.UnitFile, 0, len(rows))
	for _, row := range rows {
		out = append(out, dbus.UnitFile{Path: row[0], Type: row[1]})
	}
	return out, nil
}

func (r *replay) ListUnitsByNamesContext(_ context.Context, units []string) ([]dbus.UnitStatus, error) {
	r.calls = append(r.calls, fmt.Sprintf("ListUnitsByNames %v", units))
	return r.statuses("ListUnitsByNames.json"), nil
}

func (r *replay) GetUnitTypePropertiesContext(_ context.Context, unit, unitType string) (map[string]any, error) {
	r.calls = append(r.calls, "GetAll "+unitType+" "+unit)
	return r.properties(unit + "." + unitType + ".json")
}

func (r *replay) GetUnitPropertiesContext(_ context.Context, unit string) (map[string]any, error) {
	r.calls = append(r.calls, "GetAll Unit "+unit)
	return r.properties(unit + ".Unit.json")
}

// properties decodes a{sv} with the basic types the plugin reads as godbus gives them.
func (r *replay) properties(name string) (map[string]any, error) {
	if _, err := os.Stat(filepath.Join("testdata", "dbus", name)); err != nil {
		return nil, errors.New("org.freedesktop.DBus.Error.UnknownObject: not recorded")
	}
	var props map[string]struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	require.NoError(r.t, json.Unmarshal(r.load(name), &props))
	out := map[string]any{}
	for k, v := range props {
		var err error
		switch v.Type {
		case "s":
			var s string
			err = json.Unmarshal(v.Data, &s)
			out[k] = s
		case "u":
			var u uint32
			err = json.Unmarshal(v.Data, &u)
			out[k] = u
		case "i":
			var i int32
			err = json.Unmarshal(v.Data, &i)
			out[k] = i
		case "t":
			var u uint64
			err = json.Unmarshal(v.Data, &u)
			out[k] = u
		case "b":
			var b bool
			err = json.Unmarshal(v.Data, &b)
			out[k] = b
		}
		require.NoError(r.t, err, k)
	}
	return out, nil
}
