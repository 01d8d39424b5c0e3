//go:build linux

package diskio

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// udev reads device properties from udev's database and sysfs, caching each device's until
// its /dev node changes.
type udev struct {
	paths Paths
	cache map[string]udevEntry
}

type udevEntry struct {
	modified int64
	values   map[string]string
}

func newUdev(p Paths) *udev {
	return &udev{paths: p.withDefaults(), cache: map[string]udevEntry{}}
}

// info returns the udev properties of a device, with DEVLINKS holding its /dev links
// separated by spaces, as udevadm shows them.
func (u *udev) info(name string) (map[string]string, error) {
	devPath := filepath.Join(u.paths.Dev, name)
	var st unix.Stat_t
	if err := unix.Stat(devPath, &st); err != nil {
		return nil, fmt.Errorf("error reading %s: %w", devPath, err)
	}
	if e, ok := u.cache[name]; ok && e.modified == st.Mtim.Nano() {
		return e.values, nil
	}
	// systemd's udev keeps a file per device number; older udev one per name.
	// Rdev is 32 bits wide on some platforms, hence the conversions.
	dev := uint64(st.Rdev) //nolint:unconvert
	dataPath := filepath.Join(u.paths.Run, "udev", "data", fmt.Sprintf("b%d:%d", unix.Major(dev), unix.Minor(dev)))
	if _, err := os.Stat(dataPath); err != nil {
		dataPath = filepath.Join(u.paths.Dev, ".udev", "db", "block:"+name)
		if _, err := os.Stat(dataPath); err != nil {
			return nil, fmt.Errorf("error reading %s: %w", dataPath, err)
		}
	}
	values, err := readUdevData(dataPath)
	if err != nil {
		return nil, err
	}
	if err := readUevent(filepath.Join(u.paths.Sys, "class", "block", name), values); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	u.cache[name] = udevEntry{modified: st.Mtim.Nano(), values: values}
	return values, nil
}

// readUdevData reads "E:KEY=value" properties and "S:link" symlinks.
func readUdevData(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	values := map[string]string{}
	var links []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 4 {
			continue
		}
		switch line[:2] {
		case "S:":
			links = append(links, "/dev/"+line[2:])
		case "E:":
			if k, v, ok := strings.Cut(line[2:], "="); ok {
				values[k] = v
			}
		}
	}
	if len(links) > 0 {
		values["DEVLINKS"] = strings.Join(links, " ")
	}
	return values, sc.Err()
}

// readUevent adds the DEV* properties of sysfs (DEVNAME, DEVTYPE) and DEVPATH, which the
// udev database does not hold.
func readUevent(dir string, values map[string]string) error {
	f, err := os.Open(filepath.Join(dir, "uevent"))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.HasPrefix(k, "DEV") {
			values[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if d, ok := values["DEVNAME"]; ok && !strings.HasPrefix(d, "/dev") {
		values["DEVNAME"] = "/dev/" + d
	}
	if target, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil {
		values["DEVPATH"] = strings.TrimPrefix(filepath.Join(target, filepath.Base(dir)), "/sys")
	}
	return sc.Err()
}

// resolve turns a configured device, possibly a /dev link such as
// /dev/disk/by-id/nvme-eui.x, into the device it points to.
func (u *udev) resolve(name string) string {
	if target, err := filepath.EvalSymlinks(name); err == nil {
		return target
	}
	if target, err := filepath.EvalSymlinks(filepath.Join(u.paths.Dev, name)); err == nil {
		return target
	}
	return name
}

// wwid reads the device's World Wide Identifier where the kernel exposes one.
func (u *udev) wwid(name string) string {
	b, err := os.ReadFile(filepath.Join(u.paths.Sys, "block", filepath.Base(name), "wwid"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
