package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/host"

	"github.com/morse-agent/morse"
)

// unknown is what Telegraf's DMI source (ghw) reports for an item it cannot read.
const unknown = "unknown"

// appendOS adds the os group's fields, reading the release and uname data at most once per
// os_cache_ttl. A failed read keeps the previous fields, as Telegraf does.
func (s *System) appendOS(ctx context.Context, out []morse.Field, now time.Time) ([]morse.Field, error) {
	var err error
	if s.osFields == nil || now.Sub(s.osCachedAt) > time.Duration(s.OSCacheTTL) {
		var fields []morse.Field
		if fields, err = s.readOS(ctx); err == nil {
			s.osFields, s.osCachedAt = fields, now
		}
	}
	return append(out, s.osFields...), err
}

// readOS reads the os group's fields. os and arch are always present: arch falls back to
// Go's architecture name where uname cannot be asked, as in Telegraf.
func (s *System) readOS(ctx context.Context) ([]morse.Field, error) {
	platform := s.Source.Platform
	if platform == nil {
		platform = host.PlatformInformationWithContext
	}
	kernel := s.Source.Kernel
	if kernel == nil {
		kernel = host.KernelVersionWithContext
	}
	archOf := s.Source.Arch
	if archOf == nil {
		archOf = host.KernelArch
	}
	name, family, version, err := platform(ctx)
	if err != nil && !notImplemented(err) {
		return nil, fmt.Errorf("reading platform information: %w", err)
	}
	kv, err := kernel(ctx)
	if err != nil && !notImplemented(err) {
		return nil, fmt.Errorf("reading kernel version: %w", err)
	}
	arch, err := archOf()
	if err != nil && !notImplemented(err) {
		return nil, fmt.Errorf("reading kernel architecture: %w", err)
	}
	if arch == "" {
		arch = runtime.GOARCH
	}
	return []morse.Field{
		{Key: "arch", Value: morse.String(arch)},
		{Key: "kernel_version", Value: morse.String(kv)},
		{Key: "os", Value: morse.String(runtime.GOOS)},
		{Key: "platform", Value: morse.String(name)},
		{Key: "platform_family", Value: morse.String(family)},
		{Key: "platform_version", Value: morse.String(version)},
	}, nil
}

func notImplemented(err error) bool { return strings.Contains(err.Error(), "not implemented") }

// dmiSupported says whether DMI can be read here. Telegraf reads it on Linux and Windows;
// morse reads it on Linux, the only one of the two it runs on.
const dmiSupported = runtime.GOOS == "linux"

// appendDMI adds the dmi group's fields, reading the files at most once per dmi_cache_ttl.
func (s *System) appendDMI(out []morse.Field, now time.Time) []morse.Field {
	if s.dmiFields == nil || now.Sub(s.dmiCachedAt) > time.Duration(s.DMICacheTTL) {
		s.dmiFields, s.dmiCachedAt = readDMI(s.Source.DMIDir), now
	}
	return append(out, s.dmiFields...)
}

// dmiFiles maps each dmi field to its file under /sys/class/dmi/id, as Telegraf's source
// (through ghw) reads them. chassis_type_code is the raw SMBIOS code; chassis_type, its
// description, is derived from it.
var dmiFiles = []struct{ field, file string }{
	{"bios_date", "bios_date"},
	{"bios_vendor", "bios_vendor"},
	{"bios_version", "bios_version"},
	{"board_asset_tag", "board_asset_tag"},
	{"board_product", "board_name"},
	{"board_serial", "board_serial"},
	{"board_vendor", "board_vendor"},
	{"board_version", "board_version"},
	{"chassis_asset_tag", "chassis_asset_tag"},
	{"chassis_serial", "chassis_serial"},
	{"chassis_type_code", "chassis_type"},
	{"chassis_vendor", "chassis_vendor"},
	{"chassis_version", "chassis_version"},
	{"product_family", "product_family"},
	{"product_name", "product_name"},
	{"product_serial", "product_serial"},
	{"product_sku", "product_sku"},
	{"product_uuid", "product_uuid"},
	{"product_vendor", "sys_vendor"},
	{"product_version", "product_version"},
}

// readDMI reads every DMI item. An item that cannot be read, because the kernel restricts
// it to root or the machine has no DMI at all, is "unknown", exactly as in Telegraf.
func readDMI(dir string) []morse.Field {
	if dir == "" {
		dir = "/sys/class/dmi/id"
	}
	fields := make([]morse.Field, 0, len(dmiFiles)+1)
	chassisType := unknown
	for _, d := range dmiFiles {
		v := unknown
		if b, err := os.ReadFile(filepath.Join(dir, d.file)); err == nil {
			v = strings.TrimSpace(string(b))
		}
		if d.field == "chassis_type_code" {
			chassisType = v
		}
		fields = append(fields, morse.Field{Key: d.field, Value: morse.String(v)})
	}
	desc, ok := chassisTypes[chassisType]
	if !ok {
		desc = unknown
	}
	return append(fields, morse.Field{Key: "chassis_type", Value: morse.String(desc)})
}

// chassisTypes are the SMBIOS (DSP0134) chassis type descriptions, worded as Telegraf's
// source words them.
var chassisTypes = map[string]string{
	"1": "Other", "2": "Unknown", "3": "Desktop", "4": "Low profile desktop", "5": "Pizza box",
	"6": "Mini tower", "7": "Tower", "8": "Portable", "9": "Laptop", "10": "Notebook",
	"11": "Hand held", "12": "Docking station", "13": "All in one", "14": "Sub notebook",
	"15": "Space-saving", "16": "Lunch box", "17": "Main server chassis", "18": "Expansion chassis",
	"19": "SubChassis", "20": "Bus Expansion chassis", "21": "Peripheral chassis", "22": "RAID chassis",
	"23": "Rack mount chassis", "24": "Sealed-case PC", "25": "Multi-system chassis", "26": "Compact PCI",
	"27": "Advanced TCA", "28": "Blade", "29": "Blade enclosure", "30": "Tablet", "31": "Convertible",
	"32": "Detachable", "33": "IoT gateway", "34": "Embedded PC", "35": "Mini PC", "36": "Stick PC",
}
