// Package memlimit finds how much memory the process may use: the limit of its cgroup
// (v2's memory.max, v1's memory.limit_in_bytes) when it has one, else the host's memory. The
// agent takes a share of it as the default budget of its buffers.
package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimited is what cgroup v1 reports for no limit, rounded down to a page; anything this
// large is no limit either.
const unlimited = 1 << 62

// Limit is the process's memory limit in bytes and where it was read, such as
// "/sys/fs/cgroup/memory.max" or "/proc/meminfo". The cgroup's limit counts only when it is
// below the host's memory.
func Limit() (int64, string, error) { return limit("/") }

// limit is Limit with the file system rooted at root, for tests.
func limit(root string) (int64, string, error) {
	host, err := memTotal(filepath.Join(root, "proc/meminfo"))
	if err != nil {
		return 0, "", err
	}
	best, from := host, "/proc/meminfo"
	for _, path := range cgroupFiles(root) {
		if n, ok := readLimit(filepath.Join(root, path)); ok && n < best {
			best, from = n, "/"+path
		}
	}
	return best, from, nil
}

// cgroupFiles lists where the process's cgroup keeps its limit: under the path that
// /proc/self/cgroup names, and at the root of the cgroup mount, which is where a container
// sees its own cgroup.
func cgroupFiles(root string) []string {
	v2, v1 := "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"
	files := []string{v2, v1}
	data, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return files
	}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 || parts[2] == "/" {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			files = append(files, filepath.Join("sys/fs/cgroup", parts[2], "memory.max"))
		case strings.Contains(","+parts[1]+",", ",memory,"):
			files = append(files, filepath.Join("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"))
		}
	}
	return files
}

// readLimit reads a cgroup limit file: a number of bytes, or "max" for none.
func readLimit(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0, false
	}
	return n, true
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("memory limit: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("memory limit: %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("memory limit: %s: %w", path, err)
	}
	return 0, fmt.Errorf("memory limit: no MemTotal in %s", path)
}
