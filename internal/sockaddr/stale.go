package sockaddr

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// RemoveStale removes a unix socket file that a previous run left behind, so that a restart
// after a crash can bind again. It refuses to remove anything that is not a socket, or a
// socket that another process still serves.
func RemoveStale(network, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	if c, err := net.DialTimeout(network, path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("%s is in use by another process", path)
	}
	return os.Remove(path)
}
