// Package serializers is the contract between the outputs that take Telegraf's data_format
// and the serializer of each format (one package each under plugins/serializers). An output
// builds its serializer once, from its options (plugins/serializers/dataformat), and appends
// each batch to a buffer of its own that it reuses, so that no format copies what it writes.
//
// A metric that a format cannot write (no field it can represent, a time out of its range)
// is left out and reported with its position, so that the output counts it as dropped with
// morse.ReasonSerialize and writes the rest.
package serializers

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/morse-agent/morse"
)

// Serializer writes metrics in one data format. AppendMetric appends m to dst as Telegraf's
// Serialize writes it; when m cannot be written it returns dst unchanged and an error
// wrapping a *morse.PermanentError with Reason morse.ReasonSerialize. A Serializer may be
// called from many goroutines at once unless its package says otherwise.
type Serializer interface {
	AppendMetric(dst []byte, m morse.Metric) ([]byte, error)
}

// BatchSerializer is the capability of a format whose batch is not its metrics one after
// another (Telegraf's SerializeBatch): json's {"metrics":[...]}, prometheus's families that
// gather the samples of many metrics, csv's one header. AppendBatch appends the whole batch
// to dst as one payload and returns nil or an *Error naming the metrics it left out.
type BatchSerializer interface {
	AppendBatch(dst []byte, batch []morse.Metric) ([]byte, error)
}

// Error is what Append and AppendBatch return when they left metrics out: their positions
// in the batch, in order, and the first one's reason. Outputs turn it into their write's
// result with Result.
type Error struct {
	Indices []int
	First   error
}

// Add records that batch[i] was left out for err.
func (e *Error) Add(i int, err error) {
	e.Indices = append(e.Indices, i)
	if e.First == nil {
		e.First = err
	}
}

// With records that batch[i] was left out for err in e, or in a new Error when e is nil,
// and returns it: a serializer that fails no metric allocates none.
func (e *Error) With(i int, err error) *Error {
	if e == nil {
		e = &Error{}
	}
	e.Add(i, err)
	return e
}

// Err returns e as an error, or nil when it records nothing.
func (e *Error) Err() error {
	if e == nil || len(e.Indices) == 0 {
		return nil
	}
	return e
}

// Error gives the count and the first reason.
func (e *Error) Error() string {
	return fmt.Sprintf("%d metrics could not be serialized, the first: %v", len(e.Indices), e.First)
}

// Unwrap returns the first reason.
func (e *Error) Unwrap() error { return e.First }

// Dropped returns how many metrics err says were left out: len(Indices) for an *Error, 0 for
// nil and for any other error (which the output handles on its own).
func Dropped(err error) int {
	if e, ok := errors.AsType[*Error](err); ok {
		return len(e.Indices)
	}
	return 0
}

// Result is the outcome of writing a batch of n metrics whose serialization returned err
// and whose bytes were all delivered: nil when nothing was left out, the first reason (a
// permanent error) when every metric was, and a *morse.PartialWriteError with the positions
// otherwise. An err that is no *Error comes back as it is.
func Result(err error, n int) error {
	e, ok := errors.AsType[*Error](err)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case len(e.Indices) >= n:
		return ensurePermanent(e.First)
	}
	return &morse.PartialWriteError{Dropped: len(e.Indices), Reason: morse.ReasonSerialize, Err: e.First, Indices: e.Indices}
}

func ensurePermanent(err error) error {
	if _, ok := errors.AsType[*morse.PermanentError](err); ok {
		return err
	}
	return morse.Permanent(morse.ReasonSerialize, err)
}

// AppendNumeric appends a number or a boolean as Telegraf's internal.ToString writes it in
// the formats whose values are numbers (graphite, carbon2): integers in decimal, floats in
// plain decimal notation, shortest form ("NaN", "+Inf" and "-Inf" for the special values),
// booleans as 1 and 0. A string or a missing value appends nothing.
func AppendNumeric(dst []byte, v morse.Value) []byte {
	switch v.Type() {
	case morse.TypeFloat:
		return strconv.AppendFloat(dst, v.Float(), 'f', -1, 64)
	case morse.TypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case morse.TypeUint:
		return strconv.AppendUint(dst, v.Uint(), 10)
	case morse.TypeBool:
		if v.Bool() {
			return append(dst, '1')
		}
		return append(dst, '0')
	}
	return dst
}

// Append appends batch to dst with s: as one payload by AppendBatch when batchFormat is set
// and s is a BatchSerializer (Telegraf's use_batch_format), otherwise each metric's entry
// after the other's (Telegraf's Serialize per metric). It returns nil or an *Error.
func Append(s Serializer, dst []byte, batch []morse.Metric, batchFormat bool) ([]byte, error) {
	if bs, ok := s.(BatchSerializer); ok && batchFormat {
		return bs.AppendBatch(dst, batch)
	}
	var failed *Error // allocated only on a failure: the common batch allocates nothing
	for i, m := range batch {
		var err error
		if dst, err = s.AppendMetric(dst, m); err != nil {
			failed = failed.With(i, err)
		}
	}
	return dst, failed.Err()
}
