package processes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// procDir is the proc file system to read: the configured one, $HOST_PROC or /proc.
func (p *Processes) procDir() string {
	if p.ProcDir != "" {
		return p.ProcDir
	}
	if d := os.Getenv("HOST_PROC"); d != "" {
		return d
	}
	return "/proc"
}

// fromProc counts states from /proc/<pid>/stat. A process that exits between listing and
// reading is skipped, as in Telegraf; any other read error fails the gather.
func (p *Processes) fromProc(c counts) error {
	files, err := filepath.Glob(filepath.Join(p.procDir(), "[0-9]*", "stat"))
	if err != nil {
		return err
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %q: %w", file, err)
		}
		if err := p.countStat(c, file, data); err != nil {
			return err
		}
	}
	return nil
}

// countStat counts one /proc/<pid>/stat. The command name in parentheses may hold spaces
// and parentheses itself, so the fields are read after the last ')'.
func (p *Processes) countStat(c counts, file string, data []byte) error {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	stats := bytes.Fields(data[i+1:])
	if len(stats) < 3 {
		return fmt.Errorf("something is terribly wrong with %s", file)
	}
	switch stats[0][0] {
	case 'R':
		c["running"]++
	case 'S':
		c["sleeping"]++
	case 'D':
		c["blocked"]++
	case 'Z':
		c["zombies"]++
	case 'X':
		c["dead"]++
	case 'T', 't':
		c["stopped"]++
	case 'W':
		c["paging"]++
	case 'I':
		c["idle"]++
	case 'P':
		c["parked"]++
	default:
		p.logger().Info("unknown process state", "state", string(stats[0][0]), "file", file)
	}
	c["total"]++
	// Field 20 of stat(5), the 18th after the name, is the number of threads.
	if len(stats) < 18 {
		p.logger().Info("no thread count", "file", file)
		return nil
	}
	threads, err := strconv.ParseInt(string(stats[17]), 10, 64)
	if err != nil {
		p.logger().Info("error parsing thread count", "file", file, "error", err)
		return nil
	}
	c["total_threads"] += threads
	return nil
}
