package modbus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/inputs/internal/gathertest"
)

// build decodes config (Telegraf's keys) into the plugin, validates and initialises it.
func build(t *testing.T, config string) *Modbus {
	t.Helper()
	m := New()
	md, err := toml.Decode(config, m)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded())
	require.NoError(t, m.Validate())
	require.NoError(t, m.Init())
	t.Cleanup(m.disconnect)
	return m
}

// byseries keys each metric by its name and tags, with its fields as Go values.
func byseries(ms []morse.Metric) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, m := range ms {
		k := m.Name()
		for _, tg := range m.Tags() {
			k += "," + tg.Key + "=" + tg.Value
		}
		out[k] = testutil.FieldsOf(m)
	}
	return out
}

// requestConfig reads every data type of testdata/modbus/server.py's table in the
// "request" style, from units 1 and 2.
const requestConfig = `
name = "plc"
configuration_type = "request"
timeout = "2s"
[[request]]
  slave_id = 1
  register = "holding"
  fields = [
    { address = 0, name = "voltage", type = "INT16", scale = 0.1 },
    { address = 1, name = "signed32", type = "INT32" },
    { address = 3, name = "float32", type = "FLOAT32" },
    { address = 5, name = "text", type = "STRING", length = 4 },
    { address = 9, name = "big", type = "UINT64" },
    { address = 13, name = "bit15", type = "BIT", bit = 15 },
    { address = 13, name = "high8", type = "INT8H" },
    { address = 13, name = "low8", type = "UINT8L" },
    { address = 16, name = "half", type = "FLOAT16" },
  ]
[[request]]
  slave_id = 1
  register = "holding"
  byte_order = "CDAB"
  measurement = "swapped"
  fields = [{ address = 14, name = "word_swapped", type = "UINT32" }]
  tags = { machine = "m1" }
[[request]]
  slave_id = 1
  register = "input"
  fields = [
    { address = 0, name = "level", type = "INT16" },
    { address = 1, name = "delta", type = "INT16", output = "FLOAT64" },
    { address = 2, name = "hours", type = "UINT32", output = "INT64" },
  ]
[[request]]
  slave_id = 1
  register = "coil"
  fields = [
    { address = 0, name = "c0" },
    { address = 1, name = "c1", omit = true },
    { address = 2, name = "c2", output = "BOOL" },
  ]
[[request]]
  slave_id = 1
  register = "discrete"
  fields = [{ address = 1, name = "d1" }]
[[request]]
  slave_id = 2
  register = "holding"
  fields = [{ address = 0, name = "answer", type = "INT16" }]
`

// wantRequest is what requestConfig reads from the server's table, with Telegraf's types.
func wantRequest() map[string]map[string]any {
	return map[string]map[string]any{
		"modbus,name=plc,slave_id=1,type=holding_register": {"voltage": float64(2301) * 0.1, "signed32": int64(-123456),
			"float32": 3.5, "text": "morse-1", "big": uint64(0x0102030405060708), "bit15": uint64(1),
			"high8": int64(-128), "low8": uint64(1), "half": 1.5},
		"swapped,machine=m1,name=plc,slave_id=1,type=holding_register": {"word_swapped": uint64(0x12345678)},
		"modbus,name=plc,slave_id=1,type=input_register":               {"level": int64(100), "delta": float64(-5), "hours": int64(70000)},
		"modbus,name=plc,slave_id=1,type=coil":                         {"c0": uint64(1), "c2": true},
		"modbus,name=plc,slave_id=1,type=discrete_input":               {"d1": uint64(1)},
		"modbus,name=plc,slave_id=2,type=holding_register":             {"answer": int64(42)},
	}
}

// TestRequestStyleOverTCPAndRTU reads the real pymodbus server over Modbus/TCP and over RTU
// framing on TCP: every data type, byte orders, scale, output types, omitted fields,
// request tags and two slaves, with Telegraf's tags and field types.
func TestRequestStyleOverTCPAndRTU(t *testing.T) {
	srv := testserver.StartModbus(t)
	for mode, addr := range map[string]string{"TCP": srv.TCPAddr, "RTUoverTCP": srv.RTUAddr} {
		t.Run(mode, func(t *testing.T) {
			m := build(t, fmt.Sprintf("controller = %q\ntransmission_mode = %q\n", "tcp://"+addr, mode)+requestConfig)
			for range 2 { // the connection is kept between gathers
				acc := &testutil.Accumulator{}
				require.NoError(t, m.Gather(testutil.Context(t), acc))
				require.Empty(t, acc.Errors())
				require.Equal(t, wantRequest(), byseries(acc.Metrics()))
			}
		})
	}
}

// TestRegisterStyle reads the server in Telegraf's original style: FIXED and UFIXED with
// their scales (floats), integers with a scale kept integers, STRING, BIT, the deprecated
// FLOAT32, coils and discrete inputs as UINT16 or BOOL, and a measurement of its own.
func TestRegisterStyle(t *testing.T) {
	srv := testserver.StartModbus(t)
	m := build(t, `name = "dev"
controller = "tcp://`+srv.TCPAddr+`"
slave_id = 1
holding_registers = [
  { name = "voltage", byte_order = "AB", data_type = "FIXED", scale = 0.1, address = [0] },
  { name = "current", byte_order = "ABCD", data_type = "FIXED", scale = 0.001, address = [1, 2] },
  { name = "swapped", byte_order = "CDAB", data_type = "UFIXED", scale = 1.0, address = [14, 15] },
  { name = "raw", byte_order = "AB", data_type = "INT16", scale = 2.0, address = [0] },
  { name = "f32", byte_order = "ABCD", data_type = "FLOAT32-IEEE", scale = 1.0, address = [3, 4] },
  { name = "old_f32", byte_order = "ABCD", data_type = "FLOAT32", scale = 1.0, address = [3, 4] },
  { name = "firmware", byte_order = "AB", data_type = "STRING", address = [5, 6, 7, 8] },
  { name = "flag", byte_order = "AB", data_type = "BIT", bit = 0, address = [13] },
]
input_registers = [
  { measurement = "tank", name = "level", byte_order = "AB", data_type = "UINT16", scale = 1.0, address = [0] },
]
coils = [
  { name = "c0", address = [0] },
  { name = "c1", data_type = "BOOL", address = [1] },
]
discrete_inputs = [{ name = "d2", address = [2] }]
`)
	acc := &testutil.Accumulator{}
	require.NoError(t, m.Gather(testutil.Context(t), acc))
	require.Empty(t, acc.Errors())
	require.Equal(t, map[string]map[string]any{
		"modbus,name=dev,slave_id=1,type=holding_register": {"voltage": float64(2301) * 0.1, "current": float64(-123456) * 0.001,
			"swapped": float64(0x12345678), "raw": int64(4602), "f32": 3.5, "old_f32": 3.5, "firmware": "morse-1", "flag": uint64(1)},
		"tank,name=dev,slave_id=1,type=input_register":   {"level": uint64(100)},
		"modbus,name=dev,slave_id=1,type=coil":           {"c0": uint64(1), "c1": false},
		"modbus,name=dev,slave_id=1,type=discrete_input": {"d2": uint64(1)},
	}, byseries(acc.Metrics()))
}

// TestDeadDeviceTimesOutAlone: a device that accepts the connection and never answers fails
// its gather after the timeout, counted in internal_gather, while a live device, gathered
// meanwhile, answers at once; a unit the server does not have is an error of that slave
// only.
func TestDeadDeviceTimesOutAlone(t *testing.T) {
	srv := testserver.StartModbus(t)
	dead := build(t, `controller = "tcp://`+srv.DeadAddr+`"
timeout = "500ms"
holding_registers = [{ name = "x", byte_order = "AB", data_type = "INT16", scale = 1.0, address = [0] }]`)
	live := build(t, "controller = \"tcp://"+srv.TCPAddr+"\"\nconfiguration_type = \"request\"\n"+requestConfig[strings.Index(requestConfig, "[[request]]"):])

	deadDone := make(chan *testutil.Accumulator, 1)
	start := time.Now()
	go func() {
		acc := &testutil.Accumulator{}
		_ = dead.Gather(testutil.Context(t), acc)
		deadDone <- acc
	}()
	acc := &testutil.Accumulator{}
	require.NoError(t, live.Gather(testutil.Context(t), acc))
	require.Empty(t, acc.Errors())
	require.Len(t, acc.Metrics(), len(wantRequest()))
	select {
	case <-deadDone:
		t.Fatal("the dead device answered before the live one was read")
	default:
	}
	got := <-deadDone
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
	require.Len(t, got.Errors(), 1)
	require.ErrorContains(t, got.Errors()[0], "slave 0 on controller \"tcp://"+srv.DeadAddr+"\": reading holding@0[1]")
	require.ErrorContains(t, got.Errors()[0], "i/o timeout")

	c := gathertest.Counters(t, "modbus", dead)
	require.Equal(t, int64(1), c["errors"])
	require.Zero(t, c["metrics_gathered"])

	// Unit 3 does not exist: pymodbus answers with an exception; unit 1 is still read.
	m := build(t, `controller = "tcp://`+srv.TCPAddr+`"
configuration_type = "request"
[[request]]
  slave_id = 1
  register = "holding"
  fields = [{ address = 0, name = "v", type = "INT16" }]
[[request]]
  slave_id = 3
  register = "holding"
  fields = [{ address = 0, name = "v", type = "INT16" }]`)
	acc = &testutil.Accumulator{}
	require.NoError(t, m.Gather(testutil.Context(t), acc))
	require.Equal(t, map[string]map[string]any{"modbus,name=Device,slave_id=1,type=holding_register": {"v": int64(2301)}}, byseries(acc.Metrics()))
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "slave 3 on controller")

	// Nothing listens: the gather fails at connect.
	down := build(t, `controller = "tcp://`+testutil.FreeAddr(t)+`"
holding_registers = [{ name = "x", byte_order = "AB", data_type = "INT16", scale = 1.0, address = [0] }]`)
	err := down.Gather(testutil.Context(t), &testutil.Accumulator{})
	require.ErrorContains(t, err, "connection refused")
}
