package systemd_units //nolint:revive // the package is named as the plugin, as Telegraf's

import (
	"context"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/dbus"

	"github.com/morse-agent/morse"
)

// Gather lists the units and reports those of the pattern and type. A unit in a state
// the codes do not know is an error of its own and left out; the others are reported.
func (s *SystemdUnits) Gather(ctx context.Context, acc morse.Accumulator) error {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(s.Timeout))
		defer cancel()
	}
	c, err := s.connected(ctx)
	if err != nil {
		return err
	}
	units, err := s.units(ctx, c)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, u := range units {
		if i := strings.LastIndexByte(u.Name, '.'); i < 0 || u.Name[i+1:] != s.UnitType {
			continue
		}
		if err := s.report(ctx, c, acc, u, now); err != nil {
			acc.AddError(err)
		}
	}
	return nil
}

// units returns the loaded units that match, then with collect_disabled_units the unit
// files that are not loaded: the disabled ones as the manager describes them, the static
// ones (and disabled templates) as stub, inactive, dead, as Telegraf does.
func (s *SystemdUnits) units(ctx context.Context, c Client) ([]dbus.UnitStatus, error) {
	loaded, err := c.ListUnitsContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing loaded units failed: %w", err)
	}
	out := make([]dbus.UnitStatus, 0, len(loaded))
	seen := map[string]bool{}
	for _, u := range loaded {
		if s.filter.Match(u.Name) {
			out = append(out, u)
			seen[template(u.Name)] = true
		}
	}
	if !s.CollectDisabled {
		return out, nil
	}
	files, err := c.ListUnitFilesByPatternsContext(ctx, []string{"enabled", "disabled", "static"}, s.patterns)
	if err != nil {
		return nil, fmt.Errorf("listing unit files failed: %w", err)
	}
	disabled, static := notLoaded(files, seen)
	states, err := c.ListUnitsByNamesContext(ctx, disabled)
	if err != nil {
		return nil, fmt.Errorf("listing unit states failed: %w", err)
	}
	out = append(out, states...)
	for _, name := range static {
		if strings.EqualFold(strings.TrimPrefix(path.Ext(name), "."), s.UnitType) {
			out = append(out, dbus.UnitStatus{Name: name, LoadState: "stub", ActiveState: "inactive", SubState: "dead"})
		}
	}
	return out, nil
}

// template returns the template of an instance ("getty@.service" of "getty@tty1.service"),
// the name itself for other units.
func template(name string) string {
	if prefix, _, ok := strings.Cut(name, "@"); ok {
		return prefix + "@" + path.Ext(name)
	}
	return name
}

// notLoaded splits the unit files not seen among the loaded units into disabled ones and
// static ones; a disabled template counts as static. Enabled files are loaded units.
func notLoaded(files []dbus.UnitFile, seen map[string]bool) (disabled, static []string) {
	for _, f := range files {
		name := path.Base(f.Path)
		switch f.Type {
		case "disabled":
			if seen[name] {
				continue
			}
			seen[name] = true
			if _, suffix, ok := strings.Cut(name, "@"); ok && strings.HasPrefix(suffix, ".") {
				static = append(static, name)
				continue
			}
			disabled = append(disabled, name)
		case "static":
			if seen[template(name)] || seen[name] {
				continue
			}
			seen[template(name)] = true
			static = append(static, name)
		}
	}
	return disabled, static
}

// report adds the metric of one unit.
func (s *SystemdUnits) report(ctx context.Context, c Client, acc morse.Accumulator, u dbus.UnitStatus, now time.Time) error {
	load, ok := loadCodes[u.LoadState]
	if !ok {
		return fmt.Errorf("parsing field 'load' failed, value not in map: %s", u.LoadState)
	}
	active, ok := activeCodes[u.ActiveState]
	if !ok {
		return fmt.Errorf("parsing field 'active' failed, value not in map: %s", u.ActiveState)
	}
	sub, ok := subCodes[u.SubState]
	if !ok {
		return fmt.Errorf("parsing field 'sub' failed, value not in map: %s", u.SubState)
	}
	tags := map[string]string{"name": u.Name, "load": u.LoadState, "active": u.ActiveState, "sub": u.SubState}
	if s.user != "" {
		tags["user"] = s.user
	}
	fields := map[string]any{"load_code": load, "active_code": active, "sub_code": sub}
	if s.Details && !s.details(ctx, c, u.Name, tags, fields) {
		return nil
	}
	acc.AddFields("systemd_units", fields, tags, now)
	return nil
}

// details adds the unit's properties. It returns false for a unit whose type interface
// the manager does not know, which is left out, as in Telegraf.
func (s *SystemdUnits) details(ctx context.Context, c Client, name string, tags map[string]string, fields map[string]any) bool {
	props, err := c.GetUnitTypePropertiesContext(ctx, name, s.dbusType)
	if err != nil {
		if strings.Contains(err.Error(), "Unknown interface") {
			return false
		}
		// A unit that is not loaded (a disabled instance) has no properties: Telegraf's.
		props = map[string]any{"StatusErrno": int32(-1), "NRestarts": uint32(0)}
	}
	unit, err := c.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		s.mu.Lock()
		first := !s.warned[name]
		s.warned[name] = true
		s.mu.Unlock()
		if first {
			s.log.Warn("cannot read the unit's properties", "unit", name, "error", err)
		}
	}
	if v, ok := unit["UnitFileState"].(string); ok {
		tags["state"] = v
	}
	if v, ok := unit["UnitFilePreset"].(string); ok {
		tags["preset"] = v
	}
	if v, ok := unit["ActiveEnterTimestamp"]; ok {
		fields["active_enter_timestamp_us"] = v
	}
	for field, prop := range map[string]string{"status_errno": "StatusErrno", "restarts": "NRestarts", "pid": "MainPID"} {
		if v, ok := props[prop]; ok {
			fields[field] = v
		}
	}
	for field, prop := range map[string]string{"mem_current": "MemoryCurrent", "mem_peak": "MemoryPeak",
		"mem_avail": "MemoryAvailable", "swap_current": "MemorySwapCurrent", "swap_peak": "MemorySwapPeak"} {
		// systemd says "not known" with the largest uint64; Telegraf reports 0 for it and for
		// a property this systemd does not have.
		v, ok := props[prop].(uint64)
		if !ok || v == math.MaxUint64 {
			v = 0
		}
		fields[field] = v
	}
	return true
}
