// Package modbus is the inputs.modbus plugin: every interval it reads one Modbus device
// (a controller; one plugin instance each, as in Telegraf) over Modbus/TCP, RTU over TCP or
// ASCII over TCP with github.com/grid-x/modbus, the client Telegraf uses, and reports
// Telegraf 1.39.3's metrics: measurement "modbus" (or the field's), tags name, slave_id and
// type (coil, discrete_input, holding_register, input_register) plus the request's tags,
// the fields converted by Telegraf's data types, byte orders and scales. The "register"
// and "request" configuration styles are supported.
//
// A device that does not answer fails its own gather after timeout (1s by default), so it
// never stalls the other inputs; a slave that fails is an error of the gather, and the
// connection is opened again for the next slave, as Telegraf does.
package modbus

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	mb "github.com/grid-x/modbus"

	"github.com/morse-agent/morse"
)

// Description is the one-line summary that `morse config` prints above the sample.
const Description = "Retrieve data from MODBUS slave devices"

//go:embed sample.conf
var sampleConfig string

// Modbus is the inputs.modbus plugin and its configuration: one device. Build it with New.
type Modbus struct {
	// Name is the device's name, its name tag.
	Name string `toml:"name"`
	// Controller is tcp://host:port. Serial controllers (file://, COM1) are refused.
	Controller string `toml:"controller"`
	// TransmissionMode is "auto" or "TCP", "RTUoverTCP" or "ASCIIoverTCP".
	TransmissionMode string `toml:"transmission_mode"`
	// BaudRate, DataBits, Parity, StopBits and RS485 configure serial lines, which morse
	// does not drive: accepted for a tcp:// controller, where Telegraf ignores them too.
	BaudRate int            `toml:"baud_rate"`
	DataBits int            `toml:"data_bits"`
	Parity   string         `toml:"parity"`
	StopBits int            `toml:"stop_bits"`
	RS485    *RS485         `toml:"rs485"`
	Timeout  morse.Duration `toml:"timeout"`
	// BusyRetries is how often a slave that answers "device busy" is asked again, waiting
	// BusyRetriesWait between.
	BusyRetries     int            `toml:"busy_retries"`
	BusyRetriesWait morse.Duration `toml:"busy_retries_wait"`
	Workarounds     Workarounds    `toml:"workarounds"`
	// ConfigurationType is "register" (default) or "request"; "metric" is refused.
	ConfigurationType string `toml:"configuration_type"`
	// ExcludeRegisterTypeTag leaves out the type tag, so that a device's register types
	// share their metrics.
	ExcludeRegisterTypeTag bool `toml:"exclude_register_type_tag"`

	// The "register" style: one slave and its fields per register type.
	SlaveID          byte            `toml:"slave_id"`
	DiscreteInputs   []RegisterField `toml:"discrete_inputs"`
	Coils            []RegisterField `toml:"coils"`
	HoldingRegisters []RegisterField `toml:"holding_registers"`
	InputRegisters   []RegisterField `toml:"input_registers"`
	// Requests is the "request" style.
	Requests []Request `toml:"request"`
	// Metrics is Telegraf's "metric" style, decoded so that a config holding it loads, but
	// refused when configuration_type selects it.
	Metrics []map[string]any `toml:"metric"`
	// Optimization and MaxExtraRegisters are the "metric" style's, decoded with it.
	Optimization      string `toml:"optimization"`
	MaxExtraRegisters uint16 `toml:"optimization_max_register_fill"`

	devices   map[byte]*device
	slaves    []byte
	handler   closer
	client    mb.Client
	connected bool
}

// closer is what the plugin needs of a grid-x client handler.
type closer interface {
	Connect() error
	Close() error
	SetSlave(byte)
}

// RS485 holds Telegraf's serial RS485 keys.
type RS485 struct {
	DelayRtsBeforeSend morse.Duration `toml:"delay_rts_before_send"`
	DelayRtsAfterSend  morse.Duration `toml:"delay_rts_after_send"`
	RtsHighDuringSend  bool           `toml:"rts_high_during_send"`
	RtsHighAfterSend   bool           `toml:"rts_high_after_send"`
	RxDuringTx         bool           `toml:"rx_during_tx"`
}

// Workarounds are Telegraf's options for devices that need them.
type Workarounds struct {
	AfterConnectPause          morse.Duration `toml:"pause_after_connect"`
	PollPause                  morse.Duration `toml:"pause_between_requests"`
	CloseAfterGather           bool           `toml:"close_connection_after_gather"`
	ReadCoilsStartingAtZero    bool           `toml:"read_coils_starting_at_zero"`
	StringRegisterLocation     string         `toml:"string_register_location"`
	OneRequestPerField         bool           `toml:"one_request_per_field"`
	MaxBitRegistersPerRequest  uint16         `toml:"max_bit_registers_per_request"`
	MaxWordRegistersPerRequest uint16         `toml:"max_word_registers_per_request"`
}

// The engine finds these interfaces by type assertion; a typo would go unnoticed.
var (
	_ morse.Input       = (*Modbus)(nil)
	_ morse.Validator   = (*Modbus)(nil)
	_ morse.Initializer = (*Modbus)(nil)
)

// New returns the plugin with the sample's timeout of 1s (Telegraf's zero means no bound).
func New() *Modbus {
	return &Modbus{Name: "Device", Controller: "tcp://localhost:502", Timeout: morse.Duration(time.Second),
		BusyRetriesWait: morse.Duration(100 * time.Millisecond)}
}

func init() {
	morse.RegisterInput(morse.InputInfo{
		Name:         "modbus",
		Description:  Description,
		SampleConfig: sampleConfig,
		New:          func() morse.Input { return New() },
	})
}

// Validate reports every problem of the options, the fields' included.
func (m *Modbus) Validate() error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, morse.Errorf("name", "device name is empty"))
	}
	if _, _, err := m.address(); err != nil {
		errs = append(errs, morse.Errorf("controller", "%v", err))
	}
	if m.BusyRetries < 0 {
		errs = append(errs, morse.Errorf("busy_retries", "cannot be negative"))
	}
	if m.Timeout < 0 {
		errs = append(errs, morse.Errorf("timeout", "cannot be negative"))
	}
	w := m.Workarounds
	if w.MaxBitRegistersPerRequest > maxBits || w.MaxWordRegistersPerRequest > maxWords {
		errs = append(errs, morse.Errorf("workarounds", "at most %d bit and %d word registers per request", maxBits, maxWords))
	}
	if !slices.Contains([]string{"", "both", "lower", "upper"}, w.StringRegisterLocation) {
		errs = append(errs, morse.Errorf("workarounds.string_register_location", "invalid %q", w.StringRegisterLocation))
	}
	if _, err := m.build(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// build makes the devices of the configuration style.
func (m *Modbus) build() (map[byte]*device, error) {
	switch m.ConfigurationType {
	case "", "register":
		d, err := m.registerStyle()
		if err != nil {
			return nil, morse.Errorf("holding_registers", "%v", err)
		}
		return d, nil
	case "request":
		for _, r := range m.Requests {
			if !slices.Contains([]string{"coil", "discrete", "holding", "input"}, r.RegisterType) {
				return nil, morse.Errorf("request", "unknown register-type %q", r.RegisterType)
			}
		}
		d, err := m.requestStyle()
		if err != nil {
			return nil, morse.Errorf("request", "%v", err)
		}
		return d, nil
	case "metric":
		return nil, morse.Errorf("configuration_type", `"metric" is not supported: use "request"`)
	}
	return nil, morse.Errorf("configuration_type", "unknown configuration type %q", m.ConfigurationType)
}

// address is the controller's host:port and the transmission mode it takes.
func (m *Modbus) address() (string, string, error) {
	u, err := url.Parse(m.Controller)
	if err != nil {
		return "", "", err
	}
	if u.Scheme != "tcp" {
		return "", "", fmt.Errorf("%q: only tcp:// controllers are supported (no serial lines)", m.Controller)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", "", err
	}
	switch m.TransmissionMode {
	case "", "auto", "TCP", "RTUoverTCP", "ASCIIoverTCP":
	default:
		return "", "", fmt.Errorf("invalid transmission mode %q for tcp", m.TransmissionMode)
	}
	return u.Host, m.TransmissionMode, nil
}

// Init checks the options and builds the requests and the client; it connects at the
// first gather.
func (m *Modbus) Init() error {
	if err := m.Validate(); err != nil {
		return err
	}
	m.devices, _ = m.build() // Validate built them once
	m.slaves = m.slaves[:0]
	for id, d := range m.devices {
		if len(d.coil)+len(d.discrete)+len(d.holding)+len(d.input) > 0 {
			m.slaves = append(m.slaves, id)
		}
	}
	slices.Sort(m.slaves)
	host, mode, _ := m.address()
	timeout := time.Duration(m.Timeout)
	switch mode {
	case "RTUoverTCP":
		h := mb.NewRTUOverTCPClientHandler(host)
		h.Timeout = timeout
		m.handler, m.client = h, mb.NewClient(h)
	case "ASCIIoverTCP":
		h := mb.NewASCIIOverTCPClientHandler(host)
		h.Timeout = timeout
		m.handler, m.client = h, mb.NewClient(h)
	default:
		h := mb.NewTCPClientHandler(host)
		h.Timeout = timeout
		m.handler, m.client = h, mb.NewClient(h)
	}
	return nil
}

// Gather reads every slave of the device in turn. A slave that fails is an error of the
// gather; the connection is made again before the next one unless the device was busy.
func (m *Modbus) Gather(ctx context.Context, acc morse.Accumulator) error {
	if m.handler == nil {
		if err := m.Init(); err != nil {
			return err
		}
	}
	if !m.connected {
		if err := m.connect(ctx); err != nil {
			return fmt.Errorf("connecting to controller %q: %w", m.Controller, err)
		}
	}
	for _, id := range m.slaves {
		if err := m.readSlave(ctx, id); err != nil {
			acc.AddError(fmt.Errorf("slave %d on controller %q: %w", id, m.Controller, err))
			var mbErr *mb.Error
			if !errors.As(err, &mbErr) || mbErr.ExceptionCode != mb.ExceptionCodeServerDeviceBusy {
				m.disconnect()
				if err := m.connect(ctx); err != nil {
					return fmt.Errorf("slave %d on controller %q: connecting failed: %w", id, m.Controller, err)
				}
			}
			continue
		}
		m.emit(acc, id, time.Now())
	}
	if m.Workarounds.CloseAfterGather {
		m.disconnect()
	}
	return nil
}

func (m *Modbus) connect(ctx context.Context) error {
	err := m.handler.Connect()
	m.connected = err == nil
	if err == nil {
		return pause(ctx, time.Duration(m.Workarounds.AfterConnectPause))
	}
	return err
}

func (m *Modbus) disconnect() {
	if m.handler != nil {
		_ = m.handler.Close() // closing a connection that failed gives nothing to act on
	}
	m.connected = false
}

// pause waits d, or less when ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// emit adds the fields read from slave id, grouped by series as Telegraf's SeriesGrouper.
func (m *Modbus) emit(acc morse.Accumulator, id byte, now time.Time) {
	d := m.devices[id]
	type key struct{ measurement, tags string }
	type series struct {
		measurement string
		tags        map[string]string
		fields      map[string]any
	}
	var order []key
	grouped := map[key]*series{}
	for _, kind := range []struct {
		tag      string
		requests []request
	}{{tagCoil, d.coil}, {tagDiscrete, d.discrete}, {tagHolding, d.holding}, {tagInput, d.input}} {
		for _, r := range kind.requests {
			for _, f := range r.fields {
				tags := map[string]string{"name": m.Name, "slave_id": strconv.Itoa(int(id))}
				if !m.ExcludeRegisterTypeTag {
					tags["type"] = kind.tag
				}
				for k, v := range f.tags {
					tags[k] = v
				}
				measurement := f.measurement
				if measurement == "" {
					measurement = "modbus"
				}
				k := key{measurement, fmt.Sprint(tags)} // fmt sorts map keys
				s := grouped[k]
				if s == nil {
					s = &series{measurement, tags, map[string]any{}}
					grouped[k] = s
					order = append(order, k)
				}
				s.fields[f.name] = f.value
			}
		}
	}
	for _, k := range order {
		s := grouped[k]
		acc.AddFields(s.measurement, s.fields, s.tags, now)
	}
}
