package snmp

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gosnmp/gosnmp"
	"github.com/sleepinggenius2/gosmi/models"

	"github.com/morse-agent/morse"
)

// Field is one OID to read: a scalar at the top level, a column in a table.
type Field struct {
	// Name is the tag or field name; the MIB's name of the OID when empty.
	Name string `toml:"name"`
	// Oid is numeric (".1.3.6.1.2.1.1.5.0") or "MIB::name[.suffix]".
	Oid string `toml:"oid"`
	// OidIndexSuffix is stripped from the end of each index; rows without it are skipped.
	OidIndexSuffix string `toml:"oid_index_suffix"`
	// OidIndexLength keeps only the first N sub-identifiers of the index.
	OidIndexLength int `toml:"oid_index_length"`
	// IsTag makes the value a tag.
	IsTag bool `toml:"is_tag"`
	// Conversion is "", "float", "float(N)", "int", "hwaddr", "hex", "ipaddr", "enum",
	// "enum(1)", "displayhint" or "hextoint:ENDIAN:BITS".
	Conversion string `toml:"conversion"`
	// Translate names a value that is an OID by the MIBs.
	Translate bool `toml:"translate"`
	// SecondaryIndexTable marks the column whose values are indexes of the secondary table.
	SecondaryIndexTable bool `toml:"secondary_index_table"`
	// SecondaryIndexUse marks a column of the secondary table, joined by those values.
	SecondaryIndexUse bool `toml:"secondary_index_use"`
	// SecondaryOuterJoin keeps secondary rows nothing points to, indexed ".Secondary<idx>".
	SecondaryOuterJoin bool `toml:"secondary_outer_join"`

	prefix string // Oid with a leading dot, what a walk's answers start with
	conv   converter
	fmt    *formatter
}

type converter uint8

const (
	convNone converter = iota
	convFloat
	convInt
	convHwaddr
	convHex
	convHexToInt
	convIPAddr
	convEnum
	convEnumFull
	convDisplayHint
)

// Init translates a named OID to its number, names the field after the MIB when it has no
// name, takes the conversion the MIB's type implies when none is set, and checks the
// options, as Telegraf's Field.Init does.
func (f *Field) Init() error {
	if strings.ContainsAny(f.Oid, ":abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") || f.Name == "" {
		tr, err := Translate(f.Oid)
		if err != nil {
			return fmt.Errorf("translating %q: %w", f.Oid, err)
		}
		f.Oid = tr.oidNum
		if f.Name == "" {
			f.Name = tr.oidText
		}
		if f.Conversion == "" {
			f.Conversion = tr.conversion
		}
	}
	if f.Oid == "" {
		return fmt.Errorf("field %q has no oid", f.Name)
	}
	if f.SecondaryIndexTable && f.SecondaryIndexUse {
		return errors.New("secondary_index_table and secondary_index_use are exclusive")
	}
	if !f.SecondaryIndexTable && !f.SecondaryIndexUse && f.SecondaryOuterJoin {
		return errors.New("secondary_outer_join is set, but the field is not used in a join")
	}
	f.prefix = f.Oid
	if f.prefix[0] != '.' {
		f.prefix = "." + f.prefix
	}
	return f.initConversion()
}

func (f *Field) initConversion() error {
	c := f.Conversion
	var d int
	switch {
	case c == "":
		f.conv = convNone
	case c == "float":
		f.conv = convFloat
	case strings.HasPrefix(c, "float("):
		if _, err := fmt.Sscanf(c, "float(%d)", &d); err != nil {
			return fmt.Errorf("invalid conversion %q", c)
		}
		f.conv = convFloat
	case c == "int":
		f.conv = convInt
	case c == "hwaddr":
		f.conv = convHwaddr
	case c == "hex":
		f.conv = convHex
	case c == "ipaddr":
		f.conv = convIPAddr
	case c == "enum":
		f.conv, f.fmt = convEnum, newFormatter(f.prefix, models.FormatEnumName)
	case c == "enum(1)":
		f.conv, f.fmt = convEnumFull, newFormatter(f.prefix, models.FormatEnumName, models.FormatEnumValue)
	case c == "displayhint":
		f.conv, f.fmt = convDisplayHint, newFormatter(f.prefix)
	case strings.HasPrefix(c, "hextoint:"):
		p := strings.Split(c, ":")
		if len(p) != 3 || (p[1] != "LittleEndian" && p[1] != "BigEndian") ||
			(p[2] != "uint16" && p[2] != "uint32" && p[2] != "uint64") {
			return fmt.Errorf("invalid conversion %q: use hextoint:LittleEndian|BigEndian:uint16|uint32|uint64", c)
		}
		f.conv = convHexToInt
	default:
		return fmt.Errorf("invalid conversion type %q", c)
	}
	return nil
}

// Convert turns one answer into the value Telegraf's Field.Convert gives. A value
// of a type nothing can represent (a NULL) is returned as nil.
func (f *Field) Convert(pdu *gosnmp.SnmpPDU) (any, error) {
	v := pdu.Value
	if f.Translate {
		if s, ok := v.(string); ok {
			if tr, err := Translate(s); err == nil {
				v = tr.oidText
			}
		}
	}
	switch f.conv {
	case convNone:
		if b, ok := v.([]byte); ok {
			if pdu.Type == gosnmp.OctetString && !utf8.Valid(b) {
				return hex.EncodeToString(b), nil
			}
			return string(b), nil
		}
		return v, nil
	case convFloat:
		var d int
		_, _ = fmt.Sscanf(f.Conversion, "float(%d)", &d)
		return toFloat(v, math.Pow10(d))
	case convInt:
		return toInt(v)
	case convHwaddr:
		switch b := v.(type) {
		case string:
			return net.HardwareAddr(b).String(), nil
		case []byte:
			return net.HardwareAddr(b).String(), nil
		}
		return nil, fmt.Errorf("invalid type (%T) for hwaddr conversion", v)
	case convHex:
		return toHex(pdu, v)
	case convHexToInt:
		return hexToInt(f.Conversion, v)
	case convIPAddr:
		return toIP(v)
	}
	return f.fmt.format(pdu.Name, v)
}

func toFloat(v any, div float64) (any, error) {
	switch x := v.(type) {
	case float32:
		return float64(x) / div, nil
	case float64:
		return x / div, nil
	case int:
		return float64(x) / div, nil
	case int64:
		return float64(x) / div, nil
	case uint:
		return float64(x) / div, nil
	case uint32:
		return float64(x) / div, nil
	case uint64:
		return float64(x) / div, nil
	case []byte:
		return parseFloat(string(x), div)
	case string:
		return parseFloat(x, div)
	}
	return v, nil
}

func parseFloat(s string, div float64) (any, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("failed to convert field to float with value %s: %w", s, err)
	}
	return f / div, nil
}

func toInt(v any) (any, error) {
	switch x := v.(type) {
	case float32:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return int64(x), nil
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return v, nil
}

func toHex(pdu *gosnmp.SnmpPDU, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if pdu.Type != gosnmp.IPAddress {
			return nil, fmt.Errorf("unsupported Asn1BER (%#v) for hex conversion", pdu.Type)
		}
		ip := net.ParseIP(x)
		if ip4 := ip.To4(); ip4 != nil {
			return hex.EncodeToString(ip4), nil
		}
		return hex.EncodeToString(ip), nil
	case []byte:
		return hex.EncodeToString(x), nil
	}
	return nil, fmt.Errorf("unsupported type (%T) for hex conversion", v)
}

func hexToInt(conv string, v any) (any, error) {
	bv, ok := v.([]byte)
	if !ok {
		return v, nil
	}
	p := strings.Split(conv, ":")
	var order binary.ByteOrder = binary.BigEndian
	if p[1] == "LittleEndian" {
		order = binary.LittleEndian
	}
	switch p[2] {
	case "uint16":
		b := make([]byte, 2)
		copy(b, bv)
		return order.Uint16(b), nil
	case "uint32":
		b := make([]byte, 4)
		copy(b, bv)
		return order.Uint32(b), nil
	}
	b := make([]byte, 8)
	copy(b, bv)
	return order.Uint64(b), nil
}

func toIP(v any) (any, error) {
	var b []byte
	switch x := v.(type) {
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return nil, fmt.Errorf("invalid type (%T) for ipaddr conversion", v)
	}
	if len(b) != 4 && len(b) != 16 {
		return nil, fmt.Errorf("invalid length (%d) for ipaddr conversion", len(b))
	}
	return net.IP(b).String(), nil
}

// cell is one converted value ready for a row: a tag or a field, or nothing when the
// value is an empty string or of no type a metric holds (Telegraf leaves both out).
func (f *Field) cell(v any) (tag string, field morse.Value, ok bool) {
	if s, isStr := v.(string); isStr {
		if s == "" {
			return "", morse.Value{}, false
		}
		if f.IsTag {
			return s, morse.Value{}, true
		}
		return "", morse.String(s), true
	}
	if v == nil {
		return "", morse.Value{}, false
	}
	if f.IsTag {
		return fmt.Sprintf("%v", v), morse.Value{}, true
	}
	val, ok := morse.ValueOf(v)
	return "", val, ok
}
