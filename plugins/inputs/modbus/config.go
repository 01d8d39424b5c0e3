package modbus

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Register types, as Telegraf names them in the type tag.
const (
	tagCoil     = "coil"
	tagDiscrete = "discrete_input"
	tagHolding  = "holding_register"
	tagInput    = "input_register"
)

// The protocol's limits of one read.
const (
	maxBits  = 2000
	maxWords = 125
)

// RegisterField is one field of the "register" configuration style.
type RegisterField struct {
	Measurement string   `toml:"measurement"`
	Name        string   `toml:"name"`
	ByteOrder   string   `toml:"byte_order"`
	DataType    string   `toml:"data_type"`
	Scale       float64  `toml:"scale"`
	Address     []uint16 `toml:"address"`
	Bit         uint8    `toml:"bit"`
}

// Request is one [[inputs.modbus.request]] of the "request" configuration style.
type Request struct {
	SlaveID           byte              `toml:"slave_id"`
	ByteOrder         string            `toml:"byte_order"`
	RegisterType      string            `toml:"register"`
	Measurement       string            `toml:"measurement"`
	Optimization      string            `toml:"optimization"`
	MaxExtraRegisters uint16            `toml:"optimization_max_register_fill"`
	Fields            []RequestField    `toml:"fields"`
	Tags              map[string]string `toml:"tags"`
}

// RequestField is one field of a Request.
type RequestField struct {
	Address     uint16  `toml:"address"`
	Name        string  `toml:"name"`
	InputType   string  `toml:"type"`
	Length      uint16  `toml:"length"`
	Scale       float64 `toml:"scale"`
	OutputType  string  `toml:"output"`
	Measurement string  `toml:"measurement"`
	Omit        bool    `toml:"omit"`
	Bit         uint8   `toml:"bit"`
}

// field is one value to read: where, how long (bits or registers) and how to convert it.
type field struct {
	measurement, name string
	address, length   uint16
	omit              bool
	convert           converter
	tags              map[string]string
	value             any // of the last read
}

// request is one read of consecutive addresses and the fields it holds.
type request struct {
	address, length uint16
	fields          []field
}

// device is what one slave ID is asked for, per register type.
type device struct {
	coil, discrete, holding, input []request
}

// grouping is how fields become requests.
type grouping struct {
	maxBatch     uint16
	optimization string
	maxFill      uint16
	fromZero     bool
}

// group sorts the fields by address and makes requests of runs of adjacent fields (omitted
// ones included, as Telegraf's "none" does), each at most maxBatch long. "shrink" and
// "rearrange" leave omitted fields out of the runs' ends; "max_insert" also bridges holes of
// at most maxFill registers. The values read are the same whichever optimization.
func group(fields []field, g grouping) []request {
	sort.SliceStable(fields, func(i, j int) bool {
		return fields[i].address < fields[j].address || fields[i].address == fields[j].address && fields[i].length > fields[j].length
	})
	if g.optimization == "shrink" || g.optimization == "rearrange" || g.optimization == "max_insert" {
		fields = slices.DeleteFunc(fields, func(f field) bool { return f.omit })
	}
	var out []request
	var cur request
	for _, f := range fields {
		end := uint32(cur.address) + uint32(cur.length)
		adjacent := cur.length > 0 && uint32(f.address) == end
		if g.optimization == "max_insert" && cur.length > 0 && uint32(f.address) >= end && uint32(f.address)-end <= uint32(g.maxFill) {
			adjacent = true
		}
		newLen := uint32(f.address) + uint32(f.length) - uint32(cur.address)
		if adjacent && newLen <= uint32(g.maxBatch) {
			cur.length = uint16(newLen)
			if !f.omit {
				cur.fields = append(cur.fields, f)
			}
			continue
		}
		if len(cur.fields) > 0 {
			out = append(out, cur)
		}
		cur = request{address: f.address, length: f.length}
		if !f.omit {
			cur.fields = append(cur.fields, f)
		}
	}
	if len(cur.fields) > 0 {
		out = append(out, cur)
	}
	if g.fromZero && len(out) > 0 {
		out[0].length += out[0].address
		out[0].address = 0
	}
	return out
}

// batch is the longest read of a register type under the workarounds.
func (w *Workarounds) batch(bits bool) uint16 {
	switch {
	case w.OneRequestPerField:
		return 1
	case bits && w.MaxBitRegistersPerRequest > 0:
		return w.MaxBitRegistersPerRequest
	case !bits && w.MaxWordRegistersPerRequest > 0:
		return w.MaxWordRegistersPerRequest
	case bits:
		return maxBits
	}
	return maxWords
}

// registerStyle builds the device of the "register" configuration style.
func (m *Modbus) registerStyle() (map[byte]*device, error) {
	d := &device{}
	var errs []error
	for _, kind := range []struct {
		defs   []RegisterField
		tag    string
		target *[]request
	}{{m.Coils, tagCoil, &d.coil}, {m.DiscreteInputs, tagDiscrete, &d.discrete},
		{m.HoldingRegisters, tagHolding, &d.holding}, {m.InputRegisters, tagInput, &d.input}} {
		bits := kind.tag == tagCoil || kind.tag == tagDiscrete
		seen := map[string]bool{}
		var fields []field
		for _, def := range kind.defs {
			if seen[def.Measurement+"."+def.Name] {
				errs = append(errs, fmt.Errorf("name %q is duplicated in measurement %q %q", def.Name, def.Measurement, kind.tag))
			}
			seen[def.Measurement+"."+def.Name] = true
			f, err := m.registerField(def, bits)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", kind.tag, def.Name, err))
				continue
			}
			fields = append(fields, f)
		}
		*kind.target = group(fields, grouping{maxBatch: m.Workarounds.batch(bits), fromZero: kind.tag == tagCoil && m.Workarounds.ReadCoilsStartingAtZero})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return map[byte]*device{m.SlaveID: d}, nil
}

// registerField checks one field of the register style as Telegraf does and builds it.
func (m *Modbus) registerField(def RegisterField, bits bool) (field, error) {
	if def.Name == "" {
		return field{}, errors.New("empty name")
	}
	if len(def.Address) == 0 {
		return field{}, errors.New("no address")
	}
	for i, a := range def.Address[1:] {
		if a != def.Address[i]+1 {
			return field{}, errors.New("addresses are not consecutive")
		}
	}
	f := field{measurement: def.Measurement, name: def.Name, address: def.Address[0], length: uint16(len(def.Address))}
	if bits {
		if len(def.Address) != 1 {
			return field{}, fmt.Errorf("invalid address %v: one bit each", def.Address)
		}
		var err error
		f.convert, err = bitValue(def.DataType)
		return f, err
	}
	order, ok := map[string]string{"AB": "ABCD", "ABCD": "ABCD", "ABCDEFGH": "ABCD", "BA": "DCBA", "DCBA": "DCBA", "HGFEDCBA": "DCBA",
		"BADC": "BADC", "BADCFEHG": "BADC", "CDAB": "CDAB", "GHEFCDAB": "CDAB"}[def.ByteOrder]
	if !ok {
		return field{}, fmt.Errorf("invalid byte order %q", def.ByteOrder)
	}
	words := len(def.Address)
	switch def.DataType {
	case "STRING":
		f.convert = stringConverter(order, m.Workarounds.StringRegisterLocation)
		return f, nil
	case "BIT":
		if words != 1 {
			return field{}, fmt.Errorf("invalid address %v: a bit is in one register", def.Address)
		}
		f.convert = bitConverter(order, def.Bit)
		return f, nil
	}
	if len(def.ByteOrder) != 2*words {
		return field{}, fmt.Errorf("invalid byte order %q for %d registers", def.ByteOrder, words)
	}
	in, out := def.DataType, "native"
	switch def.DataType {
	case "FIXED", "UFIXED":
		in = map[int]string{1: "INT16", 2: "INT32", 4: "INT64"}[words]
		if def.DataType == "UFIXED" && in != "" {
			in = "U" + in
		}
		out = "FLOAT64"
	case "FLOAT32":
		out = "FLOAT64"
	case "FLOAT16-IEEE", "FLOAT32-IEEE", "FLOAT64-IEEE":
		in = def.DataType[:len(def.DataType)-len("-IEEE")]
	}
	if want := wordsOf(in); want == 0 || want != words {
		return field{}, fmt.Errorf("invalid data type %q for %d registers", def.DataType, words)
	}
	if def.Scale == 0 {
		return field{}, fmt.Errorf("invalid scale '%f'", def.Scale)
	}
	var err error
	f.convert, err = numericConverter(in, order, out, def.Scale)
	return f, err
}

// wordsOf is the registers a numeric type takes; 0 for an unknown type.
func wordsOf(t string) int {
	switch t {
	case "INT8L", "INT8H", "UINT8L", "UINT8H", "INT16", "UINT16", "FLOAT16":
		return 1
	case "INT32", "UINT32", "FLOAT32":
		return 2
	case "INT64", "UINT64", "FLOAT64":
		return 4
	}
	return 0
}

// requestStyle builds the devices of the "request" configuration style.
func (m *Modbus) requestStyle() (map[byte]*device, error) {
	devices := map[byte]*device{}
	seen := map[string]bool{}
	var errs []error
	for i, def := range m.Requests {
		fields, err := m.requestFields(def, seen)
		if err != nil {
			errs = append(errs, fmt.Errorf("request %d: %w", i+1, err))
			continue
		}
		d := devices[def.SlaveID]
		if d == nil {
			d = &device{}
			devices[def.SlaveID] = d
		}
		bits := def.RegisterType == "coil" || def.RegisterType == "discrete"
		g := grouping{maxBatch: m.Workarounds.batch(bits), optimization: def.Optimization, maxFill: def.MaxExtraRegisters,
			fromZero: def.RegisterType == "coil" && m.Workarounds.ReadCoilsStartingAtZero}
		target := map[string]*[]request{"coil": &d.coil, "discrete": &d.discrete, "holding": &d.holding, "input": &d.input}[def.RegisterType]
		*target = append(*target, group(fields, g)...)
	}
	return devices, errors.Join(errs...)
}

// requestFields checks one request as Telegraf does and builds its fields.
func (m *Modbus) requestFields(def Request, seen map[string]bool) ([]field, error) {
	order, ok := map[string]string{"": "ABCD", "ABCD": "ABCD", "MSW-BE": "ABCD", "DCBA": "DCBA", "LSW-LE": "DCBA",
		"BADC": "BADC", "MSW-LE": "BADC", "CDAB": "CDAB", "LSW-BE": "CDAB"}[def.ByteOrder]
	if !ok {
		return nil, fmt.Errorf("unknown byte-order %q", def.ByteOrder)
	}
	switch def.Optimization {
	case "", "none", "shrink", "rearrange", "max_insert":
	default:
		return nil, fmt.Errorf("unknown optimization %q", def.Optimization)
	}
	if len(def.Fields) == 0 {
		return nil, errors.New("found request section without fields")
	}
	typed := def.RegisterType == "holding" || def.RegisterType == "input"
	measurement := def.Measurement
	if measurement == "" {
		measurement = "modbus"
	}
	fields := make([]field, 0, len(def.Fields))
	for _, fd := range def.Fields {
		f, err := m.requestField(fd, typed, order)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", fd.Name, err)
		}
		if !f.omit {
			if f.measurement == "" {
				f.measurement = measurement
			}
			id := fmt.Sprint(def.SlaveID, "\x00", def.RegisterType, "\x00", f.measurement, "\x00", f.name, "\x00", def.Tags)
			if m.ExcludeRegisterTypeTag {
				id = fmt.Sprint(def.SlaveID, "\x00", f.measurement, "\x00", f.name, "\x00", def.Tags)
			}
			if seen[id] {
				return nil, fmt.Errorf("field %q duplicated in measurement %q (slave %d/%q)", f.name, f.measurement, def.SlaveID, def.RegisterType)
			}
			seen[id] = true
			f.tags = def.Tags
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// requestField builds one field of a request; its output defaults as Telegraf's: FLOAT64
// with a scale, else the input's class (INT*: INT64, UINT* and BIT: UINT64, FLOAT*: FLOAT64).
func (m *Modbus) requestField(fd RequestField, typed bool, order string) (field, error) {
	f := field{measurement: fd.Measurement, name: fd.Name, address: fd.Address, length: 1, omit: fd.Omit}
	if !fd.Omit && fd.Name == "" {
		return f, errors.New("empty field name")
	}
	if !typed {
		var err error
		f.convert, err = bitValue(fd.OutputType)
		return f, err
	}
	switch fd.InputType {
	case "STRING":
		if fd.Length < 1 {
			return f, errors.New("missing length for string field")
		}
		if fd.Scale != 0 || (fd.OutputType != "" && fd.OutputType != "STRING") {
			return f, errors.New("a string field takes no scale and no output type")
		}
		f.length, f.convert = fd.Length, stringConverter(order, m.Workarounds.StringRegisterLocation)
	case "BIT":
		f.convert = bitConverter(order, fd.Bit)
	default:
		words := wordsOf(fd.InputType)
		if words == 0 {
			return f, fmt.Errorf("unknown register data-type %q", fd.InputType)
		}
		if fd.Length != 0 || fd.Bit != 0 {
			return f, fmt.Errorf("length and bit cannot be used for type %q", fd.InputType)
		}
		out := fd.OutputType
		switch {
		case out == "" && fd.Scale != 0:
			out = "FLOAT64"
		case out == "":
			out = "native"
		case out != "INT64" && out != "UINT64" && out != "FLOAT64":
			return f, fmt.Errorf("unknown output data-type %q", fd.OutputType)
		}
		var err error
		if f.convert, err = numericConverter(fd.InputType, order, out, fd.Scale); err != nil {
			return f, err
		}
		f.length = uint16(words)
	}
	if uint32(fd.Address)+uint32(f.length) > math.MaxUint16 {
		return f, errors.New("address overflow")
	}
	return f, nil
}
