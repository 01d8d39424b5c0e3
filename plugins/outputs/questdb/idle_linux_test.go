package questdb

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkTouchAfterIdle shows where BenchmarkPrepareAfterIdle's cost comes from: it
// touches 8 MiB of memory already faulted in, one byte in each 64-byte line, after the
// process has slept, and reports the CPU per 4 KiB touched. The memory is mapped once in
// 4 KiB pages, as the Go heap is where transparent huge pages are left to madvise (Debian's
// default), and once in 2 MiB pages (MADV_HUGEPAGE); its pages are visited in address order
// or scattered, as a batch's metrics lie in the heap. Each operation is 20 rounds of
// sleeping and touching, since on this VM the cost after a wait grows over the first few
// seconds of a mostly idle process, as BenchmarkWrite/tcp's does over longer runs.
//
// On this 2-core VM 4 KiB in 4 KiB pages cost 0.15 µs back to back and 1.1 to 2.6 µs after
// 500 ms asleep; in huge pages, 0.15 and 0.34 to 0.49 µs. So most of what a write after a
// wait costs more is address translation: the machine drops the process's translations
// while it sleeps, and the write pays again for each 4 KiB page it touches.
func BenchmarkTouchAfterIdle(b *testing.B) {
	for _, huge := range []bool{false, true} {
		for _, scattered := range []bool{false, true} {
			for _, idle := range []time.Duration{0, 500 * time.Millisecond} {
				name := map[bool]string{false: "4KiB", true: "2MiB"}[huge] + "/" +
					map[bool]string{false: "in-order", true: "scattered"}[scattered] + "/" + idle.String()
				b.Run(name, func(b *testing.B) { benchTouch(b, huge, scattered, idle) })
			}
		}
	}
}

func benchTouch(b *testing.B, huge, scattered bool, idle time.Duration) {
	const rounds = 20
	mem := alignedAnon(b, 8<<20, huge)
	order := make([]int, len(mem)/4096)
	for i := range order {
		order[i] = i
	}
	if scattered {
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	touch(mem, order) // fault it all in before timing
	var cpu time.Duration
	for b.Loop() { // the sleeps are timed too, so that b.N stays small
		for range rounds {
			time.Sleep(idle)
			cpu0 := processCPU(b)
			touch(mem, order)
			cpu += processCPU(b) - cpu0
		}
	}
	pages := float64(b.N * rounds * len(order))
	b.ReportMetric(float64(cpu.Nanoseconds())/pages, "cpu-ns/4KiB")
	b.ReportMetric(float64(anonHugeKiB(b, mem)), "huge-KiB")
}

var touched byte

// touch reads and writes one byte of each 64-byte line of mem, a 4 KiB page at a time in
// the given order.
func touch(mem []byte, order []int) {
	var sum byte
	for _, p := range order {
		page := mem[p*4096 : (p+1)*4096]
		for i := 0; i < len(page); i += 64 {
			page[i]++
			sum += page[i]
		}
	}
	touched += sum
}

// alignedAnon maps size bytes of anonymous memory at a 2 MiB boundary, asking for huge pages
// if huge, and unmaps it when the benchmark ends.
func alignedAnon(b *testing.B, size int, huge bool) []byte {
	const align = 2 << 20
	raw, err := unix.Mmap(-1, 0, size+align, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = unix.Munmap(raw) })
	off := (align - int(uintptr(unsafe.Pointer(&raw[0])))%align) % align
	mem := raw[off : off+size]
	if huge {
		if err := unix.Madvise(mem, unix.MADV_HUGEPAGE); err != nil {
			b.Fatal(err)
		}
	}
	return mem
}

// anonHugeKiB is how much of the mapping that holds mem the kernel backs with huge pages, as
// /proc/self/smaps says: 0 where transparent huge pages are off.
func anonHugeKiB(b *testing.B, mem []byte) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uint64
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kib
		}
	}
	return 0
}
