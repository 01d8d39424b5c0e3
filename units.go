package morse

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that config files write as "10s", "1m30s" or "500ms". Plugin
// config structs use it for every duration option. A bare
// integer is read as seconds, as Telegraf does.
type Duration time.Duration

// UnmarshalText parses a duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" {
		*d = 0
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*d = Duration(time.Duration(n) * time.Second)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: write it like \"10s\", \"1m\" or \"500ms\"", s)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalTOML accepts a string or a bare integer number of seconds.
func (d *Duration) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		return d.UnmarshalText([]byte(x))
	case int64:
		*d = Duration(time.Duration(x) * time.Second)
		return nil
	case float64:
		*d = Duration(time.Duration(x * float64(time.Second)))
		return nil
	}
	return fmt.Errorf("invalid duration %v: write it as a string like \"10s\"", v)
}

// MarshalText writes the duration the way it is read.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// Size is a byte count that config files write as "32MiB", "512KB" or a bare integer.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first, so that "KiB" is not read as "B" after "Ki".
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// UnmarshalText parses a size such as "32MiB".
func (s *Size) UnmarshalText(b []byte) error {
	str := strings.TrimSpace(string(b))
	up := strings.ToUpper(str)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(up, u.suffix) {
			mult = u.mult
			up = strings.TrimSpace(strings.TrimSuffix(up, u.suffix))
			break
		}
	}
	n, err := strconv.ParseFloat(up, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("invalid size %q: write it like \"32MiB\", \"512KB\" or a number of bytes", str)
	}
	*s = Size(n * float64(mult))
	return nil
}

// UnmarshalTOML accepts a string or a bare integer number of bytes.
func (s *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		return s.UnmarshalText([]byte(x))
	case int64:
		if x < 0 {
			return fmt.Errorf("invalid size %d: must not be negative", x)
		}
		*s = Size(x)
		return nil
	}
	return fmt.Errorf("invalid size %v: write it as a string like \"32MiB\"", v)
}

// MarshalText writes the size as a plain byte count.
func (s Size) MarshalText() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }
