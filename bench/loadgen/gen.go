// Package loadgen generates realistic InfluxDB line protocol and sends it, paced and bounded
// in count and time, to a listener on this machine. It also holds the discarding sink and
// the verifier that morse-bench load and the end-to-end benchmark are built from.
//
// The generator builds a pool of lines once, before sending, so that the cost of making
// lines never limits the send rate. Each pooled line lacks its timestamp: the sender appends
// a unique one per line, so that a database that deduplicates points by series and time
// (InfluxDB does) stores every line sent, and the verifier can count them exactly.
package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// GenOptions configures the generator.
type GenOptions struct {
	// Seed makes the pool reproducible: the same options give the same lines.
	Seed uint64
	// Hosts is the number of distinct host tag values; it drives series cardinality.
	Hosts int
	// Lines is the size of the pool. The sender cycles through it.
	Lines int
	// NoUint writes unsigned fields as signed integers (42i instead of 42u), for servers
	// such as InfluxDB 1.x that refuse unsigned integers by default.
	NoUint bool
}

// DefaultGenOptions are what morse-bench load uses unless told otherwise.
var DefaultGenOptions = GenOptions{Seed: 1, Hosts: 1000, Lines: 65536}

// maxPoolLines bounds the pool so that a typo cannot exhaust memory.
const maxPoolLines = 10_000_000

// Pool is a set of pre-generated lines without timestamps or newlines. It is read-only once
// built, so any number of senders may share it.
type Pool struct {
	buf  []byte
	ends []int // ends[i] is where line i ends in buf; it starts where line i-1 ends
	// counted maps each measurement in the pool to the field the verifier counts.
	counted []CountedMeasurement
	// raw lines are sent without a timestamp (GenerateStatsd, GenerateSyslog).
	raw bool
	// octets frames each line as RFC 6587's octet counting does, its length in bytes and a
	// space before it and nothing after (GenerateSyslog), instead of ending it with a newline.
	octets bool
}

// CountedMeasurement names a measurement the pool holds and the field that every one of
// its lines carries, so that SELECT count(field) FROM measurement counts its lines.
type CountedMeasurement struct {
	Name  string
	Field string
}

// Len is the number of lines in the pool.
func (p *Pool) Len() int { return len(p.ends) }

// Line returns line i, without timestamp or newline. The slice aliases the pool: do not
// modify it.
func (p *Pool) Line(i int) []byte {
	start := 0
	if i > 0 {
		start = p.ends[i-1]
	}
	return p.buf[start:p.ends[i]]
}

// Measurements lists the measurements in the pool, each with the field counted to verify
// delivery.
func (p *Pool) Measurements() []CountedMeasurement { return p.counted }

// AppendLines appends n lines to dst, starting with the line for sequence number seq, each
// ended by the timestamp base+seq (in nanoseconds), unless the pool is raw, and a newline,
// or, in a pool of octet-counted messages, each after its length and a space. Sequence numbers pick
// lines round-robin from the pool, so the lines sent do not depend on how the sequence is
// split among connections.
func (p *Pool) AppendLines(dst []byte, seq int64, n int, base int64) []byte {
	size := int64(len(p.ends))
	idx := int(seq % size)
	for i := range n {
		line := p.Line(idx)
		if p.octets {
			dst = strconv.AppendInt(dst, int64(len(line)), 10)
			dst = append(dst, ' ')
			dst = append(dst, line...)
		} else {
			dst = append(dst, line...)
			if !p.raw {
				dst = append(dst, ' ')
				dst = strconv.AppendInt(dst, base+seq+int64(i), 10)
			}
			dst = append(dst, '\n')
		}
		if idx++; idx == int(size) {
			idx = 0
		}
	}
	return dst
}

// Generate builds a pool of opts.Lines lines.
func Generate(opts GenOptions) (*Pool, error) {
	if opts.Lines <= 0 || opts.Lines > maxPoolLines {
		return nil, fmt.Errorf("pool size %d: must be between 1 and %d", opts.Lines, maxPoolLines)
	}
	if opts.Hosts <= 0 {
		return nil, fmt.Errorf("hosts %d: must be at least 1", opts.Hosts)
	}
	g := &generator{
		opts:  opts,
		rng:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		hosts: make([]string, opts.Hosts),
	}
	for i := range g.hosts {
		g.hosts[i] = fmt.Sprintf("host-%05d", i)
	}
	for _, m := range measurements {
		g.totalWeight += m.weight
	}
	p := &Pool{ends: make([]int, 0, opts.Lines), buf: make([]byte, 0, opts.Lines*160)}
	seen := make([]bool, len(measurements))
	for range opts.Lines {
		mi := g.pickMeasurement()
		seen[mi] = true
		p.buf = g.appendLine(p.buf, &measurements[mi])
		p.ends = append(p.ends, len(p.buf))
	}
	for i, m := range measurements {
		if seen[i] {
			p.counted = append(p.counted, CountedMeasurement{Name: m.name, Field: m.fields[0].key})
		}
	}
	return p, nil
}

// generator holds the state of one Generate call.
type generator struct {
	opts        GenOptions
	rng         *rand.Rand
	hosts       []string
	totalWeight int
	picked      []int // scratch: the optional indexes chosen for one line
}

func (g *generator) pickMeasurement() int {
	r := g.rng.IntN(g.totalWeight)
	for i, m := range measurements {
		if r < m.weight {
			return i
		}
		r -= m.weight
	}
	return len(measurements) - 1
}

// appendLine appends one line of m: the measurement, its required tags and about half of
// its optional ones, the first field and a random number of the others.
func (g *generator) appendLine(dst []byte, m *measurement) []byte {
	dst = appendEscaped(dst, m.name, false)
	for _, t := range m.tags {
		if !t.required && g.rng.IntN(2) == 0 {
			continue
		}
		dst = append(dst, ',')
		dst = appendEscaped(dst, t.key, true)
		dst = append(dst, '=')
		if t.values == nil {
			dst = appendEscaped(dst, g.hosts[g.rng.IntN(len(g.hosts))], true)
		} else {
			dst = appendEscaped(dst, t.values[g.rng.IntN(len(t.values))], true)
		}
	}
	dst = append(dst, ' ')
	dst = g.appendField(dst, &m.fields[0])
	// Draw how many fields the line has, 1 to all, then which of the optional ones: every
	// count is equally likely, so lines with one field and lines with eight both occur.
	extra := g.rng.IntN(len(m.fields))
	g.picked = sample(g.rng, g.picked[:0], len(m.fields)-1, extra)
	for _, i := range g.picked {
		dst = append(dst, ',')
		dst = g.appendField(dst, &m.fields[1+i])
	}
	return dst
}

// sample appends to dst k distinct indexes out of [0, n), in increasing order (Knuth's
// selection sampling), so that fields keep their schema order.
func sample(rng *rand.Rand, dst []int, n, k int) []int {
	for i := 0; i < n && k > 0; i++ {
		if rng.IntN(n-i) < k {
			dst = append(dst, i)
			k--
		}
	}
	return dst
}

func (g *generator) appendField(dst []byte, f *fieldDef) []byte {
	dst = appendEscaped(dst, f.key, true)
	dst = append(dst, '=')
	switch f.kind {
	case kindFloat:
		return g.appendFloat(dst, f.min+g.rng.Float64()*(f.max-f.min))
	case kindInt:
		return append(strconv.AppendInt(dst, g.intIn(f), 10), 'i')
	case kindUint:
		v := uint64(g.intIn(f))
		if g.opts.NoUint {
			return append(strconv.AppendUint(dst, v, 10), 'i')
		}
		return append(strconv.AppendUint(dst, v, 10), 'u')
	case kindString:
		return appendString(dst, f.words[g.rng.IntN(len(f.words))])
	default:
		return append(dst, boolWords[g.rng.IntN(len(boolWords))]...)
	}
}

// boolWords are the spellings of booleans line protocol accepts; the long lower-case ones
// are the common case, as writers produce them.
var boolWords = []string{"true", "false", "true", "false", "true", "false", "t", "f", "T", "F", "True", "False", "TRUE", "FALSE"}

func (g *generator) intIn(f *fieldDef) int64 {
	lo, hi := int64(f.min), int64(f.max)
	return lo + g.rng.Int64N(hi-lo+1)
}

// appendFloat writes v the ways writers do: mostly rounded to a few decimals, sometimes in
// full precision, now and then in exponent form or as a whole number without a point.
func (g *generator) appendFloat(dst []byte, v float64) []byte {
	switch r := g.rng.IntN(20); {
	case r == 0:
		return strconv.AppendFloat(dst, v/1e7, 'e', -1, 64)
	case r == 1:
		return strconv.AppendFloat(dst, math.Round(v), 'f', -1, 64)
	case r < 6:
		return strconv.AppendFloat(dst, v, 'f', -1, 64)
	default:
		return strconv.AppendFloat(dst, v, 'f', 1+r%4, 64)
	}
}

// appendEscaped writes a measurement name (key false) or a tag key, tag value or field key
// (key true) with line protocol's escapes: comma and space always, equals sign in keys and
// tag values.
func appendEscaped(dst []byte, s string, key bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ',' || c == ' ' || (key && c == '=') {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// appendString writes a string field value in double quotes, escaping quotes and
// backslashes.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return append(dst, '"')
}
