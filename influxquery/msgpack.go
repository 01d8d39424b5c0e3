package influxquery

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// MessagePack codes (from the MessagePack spec), as constants so that switches on them
// compile to jumps; msgpcode declares them as variables.
const (
	mpNil    = 0xc0
	mpFalse  = 0xc2
	mpTrue   = 0xc3
	mpFloat  = 0xca
	mpDouble = 0xcb
	mpUint8  = 0xcc
	mpUint64 = 0xcf
	mpInt8   = 0xd0
	mpInt64  = 0xd3
	mpStr8   = 0xd9
	mpStr32  = 0xdb
	mpFixStr = 0xa0
	mpFixMax = 0xbf
)

// timeExtID is the MessagePack extension type that InfluxDB's encoder (tinylib/msgp) uses for
// time.Time: 12 bytes, the seconds since the epoch as a big-endian int64 and the nanoseconds
// as a big-endian int32.
const (
	timeExtID  = 5
	timeExtLen = 12
)

// msgpackDecoder decodes InfluxDB's MessagePack answers straight from the stream, into rows
// or into typed columns, merging the documents of a chunked answer as it goes.
type msgpackDecoder struct {
	dec      *msgpack.Decoder
	columnar bool
	epoch    time.Duration // the unit of integer times; 0 when times are extension values
	resp     *Response
	extBuf   []byte // the body of an extension value, reused: one time per row
}

// decodeMsgpack reads every document of r into resp.
func decodeMsgpack(r io.Reader, resp *Response, columnar bool, epoch time.Duration) error {
	d := &msgpackDecoder{dec: msgpack.NewDecoder(r), columnar: columnar, epoch: epoch, resp: resp,
		extBuf: make([]byte, timeExtLen)}
	for {
		if _, err := d.dec.PeekCode(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := d.document(); err != nil {
			return fmt.Errorf("influxdb: MessagePack answer: %w", err)
		}
	}
}

// document decodes one {"results": [...]} or {"error": "..."} map.
func (d *msgpackDecoder) document() error {
	return d.mapEach(func(key string) error {
		switch key {
		case "results":
			return d.arrayEach(func(int) error { return d.result() })
		case "error":
			s, err := d.dec.DecodeString()
			d.resp.Err = s
			return err
		}
		return d.dec.Skip()
	})
}

// result decodes one statement's result. InfluxDB writes statement_id first, which is what
// lets a chunk continue the result of the previous one.
func (d *msgpackDecoder) result() error {
	var res *Result
	cur := func() *Result {
		if res == nil {
			// No statement_id: InfluxDB leaves it out of a failed statement's result, which
			// is the one after the previous.
			id := 0
			if n := len(d.resp.Results); n > 0 {
				id = d.resp.Results[n-1].StatementID + 1
			}
			res = d.resp.result(id)
		}
		return res
	}
	return d.mapEach(func(key string) error {
		switch key {
		case "statement_id":
			id, err := d.dec.DecodeInt()
			if res == nil {
				res = d.resp.result(id)
			}
			res.StatementID = id
			res.Partial = false // until this chunk says otherwise
			return err
		case "series":
			r := cur()
			return d.arrayEach(func(int) error { return d.series(r) })
		case "messages":
			r := cur()
			var msgs []Message
			err := d.dec.Decode(&msgs)
			r.Messages = append(r.Messages, msgs...)
			return err
		case "partial":
			p, err := d.dec.DecodeBool()
			cur().Partial = p
			return err
		case "error":
			s, err := d.dec.DecodeString()
			cur().Err = s
			return err
		}
		return d.dec.Skip()
	})
}

// series decodes one series. Name, tags and columns come before values, so the values go
// straight into their target: the series they continue, or a new one.
func (d *msgpackDecoder) series(res *Result) error {
	var h seriesHeader
	var rows *Series
	var cols *ColumnarSeries
	err := d.mapEach(func(key string) error {
		var err error
		switch key {
		case "name":
			h.name, err = d.dec.DecodeString()
		case "tags":
			h.tags, err = d.stringMap()
		case "columns":
			err = d.dec.Decode(&h.columns)
		case "values":
			if d.columnar {
				cols = res.columnTarget(h)
				cols.Partial = false // until this chunk says otherwise
				return d.columnValues(cols)
			}
			rows = res.rowTarget(h)
			rows.Partial = false
			return d.rowValues(rows)
		case "partial":
			var p bool
			p, err = d.dec.DecodeBool()
			if rows != nil {
				rows.Partial = p
			}
			if cols != nil {
				cols.Partial = p
			}
		default:
			err = d.dec.Skip()
		}
		return err
	})
	if err == nil && rows == nil && cols == nil { // a series without values
		if d.columnar {
			res.columnTarget(h)
		} else {
			res.rowTarget(h)
		}
	}
	return err
}

func (d *msgpackDecoder) stringMap() (map[string]string, error) {
	n, err := d.dec.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	m := make(map[string]string, n)
	for range n {
		k, err := d.dec.DecodeString()
		if err != nil {
			return nil, err
		}
		if m[k], err = d.dec.DecodeString(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// rowValues decodes the values array into rows of boxed values.
func (d *msgpackDecoder) rowValues(s *Series) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n <= 0 {
		return err
	}
	s.Values = grow(s.Values, n)
	// One backing array for the rows of the usual width, rather than one allocation per row.
	width := len(s.Columns)
	block := make([]any, n*width)
	for range n {
		w, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		var row []any
		if w == width {
			row, block = block[:w:w], block[w:]
		} else {
			row = make([]any, max(w, 0))
		}
		for j := range row {
			if row[j], err = d.value(); err != nil {
				return err
			}
		}
		s.Values = append(s.Values, row)
	}
	return nil
}

// columnValues decodes the values array into typed columns, with no boxed value in between.
func (d *msgpackDecoder) columnValues(s *ColumnarSeries) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil || n <= 0 {
		return err
	}
	s.reserve(n)
	off := 0
	if s.hasTime {
		off = 1
	}
	for range n {
		w, err := d.dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		for j := range w {
			if j < off {
				t, err := d.timeNanos()
				if err != nil {
					return err
				}
				s.Time = append(s.Time, t)
				continue
			}
			if err := d.appendValue(s.column(j - off)); err != nil {
				return err
			}
		}
		if w < off {
			s.Time = append(s.Time, 0)
		}
		s.endRow()
	}
	return nil
}

// appendValue decodes one value into a column, choosing the typed append by the code.
func (d *msgpackDecoder) appendValue(c *Column) error {
	code, err := d.dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case code <= 0x7f || code >= 0xe0 || (code >= mpInt8 && code <= mpInt64):
		v, err := d.dec.DecodeInt64()
		c.AppendInt(v)
		return err
	case code == mpDouble || code == mpFloat:
		v, err := d.dec.DecodeFloat64()
		c.AppendFloat(v)
		return err
	case (code >= mpFixStr && code <= mpFixMax) || (code >= mpStr8 && code <= mpStr32):
		v, err := d.dec.DecodeString()
		c.AppendString(v)
		return err
	case code == mpTrue || code == mpFalse:
		v, err := d.dec.DecodeBool()
		c.AppendBool(v)
		return err
	case code == mpNil:
		c.AppendNull()
		return d.dec.DecodeNil()
	case code >= mpUint8 && code <= mpUint64:
		v, err := d.dec.DecodeUint64()
		c.AppendUint(v)
		return err
	}
	v, err := d.value()
	c.AppendAny(v)
	return err
}

// value decodes one value as int64, uint64, float64, string, bool, nil or time.Time.
func (d *msgpackDecoder) value() (any, error) {
	code, err := d.dec.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case code <= 0x7f || code >= 0xe0 || (code >= mpInt8 && code <= mpInt64):
		return d.dec.DecodeInt64()
	case code == mpDouble || code == mpFloat:
		return d.dec.DecodeFloat64()
	case (code >= mpFixStr && code <= mpFixMax) || (code >= mpStr8 && code <= mpStr32):
		return d.dec.DecodeString()
	case code == mpTrue || code == mpFalse:
		return d.dec.DecodeBool()
	case code == mpNil:
		return nil, d.dec.DecodeNil()
	case code >= mpUint8 && code <= mpUint64:
		return d.dec.DecodeUint64()
	case isExt(code):
		return d.ext()
	}
	return d.dec.DecodeInterfaceLoose()
}

func isExt(code byte) bool { return (code >= 0xd4 && code <= 0xd8) || (code >= 0xc7 && code <= 0xc9) }

// ext decodes an extension value: InfluxDB's time, or the raw bytes of any other.
func (d *msgpackDecoder) ext() (any, error) {
	id, n, err := d.dec.DecodeExtHeader()
	if err != nil {
		return nil, err
	}
	if id == timeExtID && n == timeExtLen {
		sec, nsec, err := d.extTime()
		return time.Unix(sec, nsec).UTC(), err
	}
	b := make([]byte, n)
	return b, d.dec.ReadFull(b)
}

// extTime reads the body of a time extension.
func (d *msgpackDecoder) extTime() (sec, nsec int64, err error) {
	if err := d.dec.ReadFull(d.extBuf); err != nil {
		return 0, 0, err
	}
	return int64(binary.BigEndian.Uint64(d.extBuf[:8])), int64(int32(binary.BigEndian.Uint32(d.extBuf[8:]))), nil
}

// timeNanos decodes a time column value as nanoseconds: an extension time, or an integer in
// the epoch unit. The usual two are decoded without boxing them in an interface.
func (d *msgpackDecoder) timeNanos() (int64, error) {
	code, err := d.dec.PeekCode()
	if err != nil {
		return 0, err
	}
	switch {
	case code == 0xc7: // ext 8, which InfluxDB uses for times
		id, n, err := d.dec.DecodeExtHeader()
		if err != nil {
			return 0, err
		}
		if id != timeExtID || n != timeExtLen {
			return 0, fmt.Errorf("time column: extension %d of %d bytes", id, n)
		}
		sec, nsec, err := d.extTime()
		return sec*1e9 + nsec, err
	case code <= 0x7f || code >= 0xe0 || (code >= mpInt8 && code <= mpInt64):
		v, err := d.dec.DecodeInt64()
		return v * int64(max(d.epoch, 1)), err
	}
	v, err := d.value()
	if err != nil {
		return 0, err
	}
	return timeToNanos(v, d.epoch)
}

// timeToNanos converts a decoded time value to nanoseconds since the epoch.
func timeToNanos(v any, epoch time.Duration) (int64, error) {
	unit := int64(max(epoch, 1))
	switch t := v.(type) {
	case time.Time:
		return t.UnixNano(), nil
	case int64:
		return t * unit, nil
	case uint64:
		return int64(t) * unit, nil
	case float64:
		return int64(t * float64(unit)), nil
	case string:
		p, err := time.Parse(time.RFC3339Nano, t)
		return p.UnixNano(), err
	}
	return 0, fmt.Errorf("time value of type %T", v)
}

// mapEach calls fn for every key of a map; fn decodes or skips the value.
func (d *msgpackDecoder) mapEach(fn func(key string) error) error {
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for range max(n, 0) {
		key, err := d.dec.DecodeString()
		if err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// arrayEach calls fn for every element of an array; fn decodes the element.
func (d *msgpackDecoder) arrayEach(fn func(i int) error) error {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	for i := range max(n, 0) {
		if err := fn(i); err != nil {
			return err
		}
	}
	return nil
}
