// Package systemd_units is the inputs.systemd_units plugin: the load, active and sub state
// of systemd's units of one type, asked over D-Bus (github.com/coreos/go-systemd/v22/dbus,
// as Telegraf does), with Telegraf's tags (name, load, active, sub; state, preset and user
// where Telegraf adds them) and integer codes (load_code, active_code, sub_code).
//
// details adds, from the unit's properties, status_errno, restarts, pid, the memory and
// swap figures (unsigned, 0 where systemd has none) and active_enter_timestamp_us.
//
// Unlike Telegraf, which fails at start without a bus, morse connects at the first gather
// and again after a lost connection: a bus not there yet is an error of that gather.
package systemd_units //nolint:revive // the package is named as the plugin, as Telegraf's

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/dbus"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/common/glob"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Gather information about systemd-unit states"

//go:embed sample.conf
var sampleConfig string

// SystemdUnits is the inputs.systemd_units plugin and its configuration. Build it with New.
type SystemdUnits struct {
	// Pattern is a space-separated list of glob patterns of the unit names to report.
	Pattern string `toml:"pattern"`
	// UnitType is the type of the units reported: service (the default), socket, target,
	// device, mount, automount, swap, timer, path, slice or scope.
	UnitType string `toml:"unittype"`
	// Scope is "system" (the default) or "user", the manager of the user morse runs as.
	Scope string `toml:"scope"`
	// CollectDisabled also reports the unit files that are not loaded: disabled and static.
	CollectDisabled bool `toml:"collect_disabled_units"`
	// Details adds the units' properties.
	Details bool `toml:"details"`
	// Timeout bounds the D-Bus calls of one gather.
	Timeout morse.Duration `toml:"timeout"`

	// Connect opens the connection to the manager; nil means D-Bus's system or session
	// bus as Scope says. Tests give a client with recorded answers.
	Connect func(ctx context.Context) (Client, error) `toml:"-"`

	log      *slog.Logger
	patterns []string
	filter   *glob.Matcher
	dbusType string // the unit type as D-Bus names its interface: "Service"
	user     string

	mu     sync.Mutex // guards client and warned between Gather and Stop
	client Client
	warned map[string]bool
}

// Client is the part of *dbus.Conn the plugin uses.
type Client interface {
	Connected() bool
	Close()
	ListUnitsContext(ctx context.Context) ([]dbus.UnitStatus, error)
	ListUnitFilesByPatternsContext(ctx context.Context, states, patterns []string) ([]dbus.UnitFile, error)
	ListUnitsByNamesContext(ctx context.Context, units []string) ([]dbus.UnitStatus, error)
	GetUnitTypePropertiesContext(ctx context.Context, unit, unitType string) (map[string]any, error)
	GetUnitPropertiesContext(ctx context.Context, unit string) (map[string]any, error)
}

var (
	_ morse.ServiceInput = (*SystemdUnits)(nil)
	_ morse.Validator    = (*SystemdUnits)(nil)
	_ morse.Initializer  = (*SystemdUnits)(nil)
	_ morse.LoggerSetter = (*SystemdUnits)(nil)
	_ Client             = (*dbus.Conn)(nil)
)

// New returns the plugin with Telegraf's defaults: every service of the system manager, a
// 5 s timeout.
func New() *SystemdUnits { return &SystemdUnits{Timeout: morse.Duration(5 * time.Second)} }

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "systemd_units",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

var unitTypes = []string{"service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope"}

// Validate reports every option out of its range.
func (s *SystemdUnits) Validate() error {
	var errs []error
	if s.UnitType != "" && !slices.Contains(unitTypes, s.UnitType) {
		errs = append(errs, morse.Errorf("unittype", "invalid %q: choose from %s", s.UnitType, strings.Join(unitTypes, ", ")))
	}
	if s.Scope != "" && s.Scope != "system" && s.Scope != "user" {
		errs = append(errs, morse.Errorf("scope", "invalid %q: choose \"system\" or \"user\"", s.Scope))
	}
	if _, err := glob.Compile("pattern", strings.Fields(s.Pattern)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SetLogger gives the plugin the engine's logger.
func (s *SystemdUnits) SetLogger(l *slog.Logger) { s.log = l }

// Init fills in the defaults and, for the user scope, finds the user to tag.
func (s *SystemdUnits) Init() error {
	if s.Pattern == "" {
		s.Pattern = "*"
	}
	if s.UnitType == "" {
		s.UnitType = "service"
	}
	s.dbusType = strings.ToUpper(s.UnitType[:1]) + s.UnitType[1:]
	// The manager takes the same patterns to list unit files.
	s.patterns = strings.Fields(s.Pattern)
	var err error
	if s.filter, err = glob.Compile("pattern", s.patterns); err != nil {
		return err
	}
	if s.Scope == "user" {
		u, err := user.Current()
		if err != nil {
			return fmt.Errorf("unable to determine user: %w", err)
		}
		s.user = u.Username
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.warned = map[string]bool{}
	return nil
}

// Start returns at once: the connection is opened by the first gather, so that a manager
// or bus not yet up delays only the metrics, not the agent.
func (s *SystemdUnits) Start(context.Context, morse.Accumulator) error { return nil }

// Stop closes the connection.
func (s *SystemdUnits) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// connected returns the open connection, opening a new one if there is none or it broke.
func (s *SystemdUnits) connected(ctx context.Context) (Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil && s.client.Connected() {
		return s.client, nil
	}
	if s.client != nil {
		s.log.Debug("connection to the systemd manager lost, reconnecting")
		s.client.Close()
		s.client = nil
	}
	connect := s.Connect
	if connect == nil {
		connect = s.dial
	}
	c, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to the systemd manager (%s scope): %w", s.scope(), err)
	}
	s.client = c
	return c, nil
}

func (s *SystemdUnits) dial(ctx context.Context) (Client, error) {
	if s.Scope == "user" {
		return dbus.NewUserConnectionContext(ctx)
	}
	return dbus.NewSystemConnectionContext(ctx)
}

func (s *SystemdUnits) scope() string {
	if s.Scope == "" {
		return "system"
	}
	return s.Scope
}
