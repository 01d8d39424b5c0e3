package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/morse-agent/morse/bench/loadgen"
)

// printReport writes the report for people.
func printReport(w io.Writer, r *loadgen.Report) {
	rate := "flat out"
	if r.Rate > 0 {
		rate = fmt.Sprintf("at %s lines/s", count(int64(r.Rate)))
	}
	fmt.Fprintf(w, "sent %s lines (%s) over %s to %s in %.2fs, %s, %d connection(s)\n",
		count(r.Lines), size(float64(r.Bytes)), r.Transport, r.Addr, r.ElapsedSec, rate, r.Connections)
	fmt.Fprintf(w, "  throughput  %s lines/s, %s/s", count(int64(r.LinesPerSec)), size(r.BytesPerSec))
	if r.WireBytes != r.Bytes {
		fmt.Fprintf(w, " (%s on the wire)", size(float64(r.WireBytes)))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  requests    %s", count(r.Requests))
	if len(r.HTTPStatus) > 0 {
		codes := make([]string, 0, len(r.HTTPStatus))
		for c := range r.HTTPStatus {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%s: %s", c, count(r.HTTPStatus[c]))
		}
		fmt.Fprintf(w, " (HTTP %s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  failed      %s lines in %s requests\n", count(r.FailedLines), count(r.Errors))
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	if v := r.Verify; v != nil {
		state := fmt.Sprintf("settled after %.1fs", v.WaitSec)
		if !v.Settled {
			state = fmt.Sprintf("still changing after %.1fs", v.WaitSec)
		}
		fmt.Fprintf(w, "  verified    %s of %s lines arrived (%.3f%%), %s\n",
			count(v.Arrived), count(v.Sent), v.Percent, state)
	}
}

// count formats n with thousands separators.
func count(n int64) string {
	if n < 0 {
		return "-" + count(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// size formats a byte count in binary units.
func size(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
