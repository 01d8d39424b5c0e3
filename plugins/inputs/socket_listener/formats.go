package socketlistener

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/parsers"
	"github.com/morse-agent/morse/plugins/parsers/dataformat"
)

// dataFormat is dataformat.Config under a name of its own: the listener embeds
// tlsserver.Config too, and Go embeds a type under its name.
type dataFormat = dataformat.Config

// settings are what the listener tells the parser of data_format it builds.
func (s *SocketListener) settings() parsers.Settings {
	return parsers.Settings{MetricName: "socket_listener"}
}

// newOther builds the parser of a data_format other than influx, for one connection or
// one datagram receiver. Init built one already, so the options are known to be good.
func (s *SocketListener) newOther() parsers.Parser {
	p, err := s.NewParser(s.settings())
	if err != nil {
		panic("socket_listener: data_format options changed after Init: " + err.Error())
	}
	return p
}

// refused counts the entries that err refused and logs the first; from names the sender
// and line, where not zero, the line of the connection's stream it came in.
func (s *SocketListener) refused(err error, from any, line int) {
	s.c.parseErr.Add(int64(parsers.Refused(err)))
	var pe *parsers.Error
	if errors.As(err, &pe) && len(pe.Entries) > 0 {
		e := pe.Entries[0]
		if line > 0 {
			e.Line = line
		}
		err = e
	}
	s.errLog.Log(s.log, slog.LevelWarn, "malformed entry", "format", s.Format(), "from", from, "error", err.Error())
}

// maxStreamLine bounds one line of a stream in a format other than influx, as the influx
// parser's MaxLineBytes does: a longer line is refused and skipped.
const maxStreamLine = 1 << 20

// errLineTooLong is the reason of a line longer than maxStreamLine.
var errLineTooLong = errors.New("line longer than 1 MiB")

// parseLines reads a stream one line at a time, as Telegraf's stream listener splits it,
// and hands each line, without its line ending, to the parser: to ParseLine where the
// parser keeps state from line to line. pending counts the refused entries; emit, the
// metrics, as with line protocol.
func (s *SocketListener) parseLines(r io.Reader, emit func(morse.Metric), from any, pending *int64) error {
	p := s.newOther()
	lp, _ := p.(parsers.LineParser)
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	skip := false
	for n := 1; ; {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if long = append(long, chunk...); len(long) > maxStreamLine {
				long, skip = long[:0], true
			}
			continue
		}
		line := chunk
		if len(long) > 0 {
			line = append(long, chunk...)
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if len(line) > 0 || skip {
			var perr error
			switch {
			case skip:
				perr = errLineTooLong
			case lp != nil:
				perr = lp.ParseLine(line, emit)
			default:
				perr = p.Parse(line, emit)
			}
			if perr != nil {
				*pending += int64(parsers.Refused(perr))
				s.refused(perr, from, n)
			}
		}
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			n++
		}
		long, skip = long[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// parseDatagram parses one datagram whole, as Telegraf does, with a parser of a format
// other than influx; it returns the number of entries it read, good or refused.
func (d *datagramParser) parseDatagram(b []byte, from any) int {
	if d.other == nil {
		d.other = d.sl.newOther()
	}
	n := 0
	err := d.other.Parse(b, func(m morse.Metric) {
		n++
		d.emit(m)
	})
	if err != nil {
		n += parsers.Refused(err)
		d.sl.refused(err, from, 0)
	}
	return n
}
