//go:build !linux

package diskio

import "errors"

// udev is not available outside Linux: names and tags come from the kernel name alone, as
// in Telegraf.
type udev struct{}

func newUdev(Paths) *udev { return &udev{} }

func (*udev) info(string) (map[string]string, error) {
	return nil, errors.New("device metadata is only available on Linux")
}

func (*udev) resolve(name string) string { return name }

func (*udev) wwid(string) string { return "" }
