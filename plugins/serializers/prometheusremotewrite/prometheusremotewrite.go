// Package prometheusremotewrite writes metrics as a Prometheus remote-write request, as
// Telegraf's prometheusremotewrite serializer does: a WriteRequest protobuf message (remote
// write 1.0, prompb), snappy-compressed in the block format, which Prometheus's
// remote-write receiver, VictoriaMetrics, Mimir, Cortex and Thanos read. outputs.http sends
// it with the headers the protocol asks for.
//
// Each numeric or boolean field is a sample of the series <measurement>_<field> (the field
// alone for the measurement "prometheus"), named and labelled by the prometheus serializer's
// rules (SanitizeMetricName, SanitizeLabelName): the tags are its labels, without those of
// an empty value, and with prometheus_string_as_label the string fields too. Timestamps are
// in milliseconds. Histograms and summaries follow Telegraf's conventions, recognised within
// the batch as the prometheus serializer recognises them (a morse metric carries no
// Prometheus type): _bucket fields on metrics tagged le, fields on metrics tagged quantile,
// and the _sum and _count fields of the same names.
//
// The samples of one series in a batch are written in time order, one per timestamp (the
// later one in the batch wins). Telegraf drops a sample older than one before it in the
// batch; morse keeps it, in order, since a receiver accepts it so. Series are written in
// the order first seen, or with prometheus_sort_metrics in Telegraf's order (by number of
// labels, then by label names and values). A metric of which no field makes a sample is
// left out and reported (serializers.Error), where Telegraf only logs it.
//
// The message is encoded by hand with protowire rather than through
// github.com/prometheus/prometheus/prompb: four small messages do not need that module's
// dependencies, and the encoder writes straight into a reused buffer with no message built
// in between. The bytes are those gogo-protobuf writes for prompb (fields in order, zero
// values left out), so that a batch of one series encodes as Telegraf's.
package prometheusremotewrite

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/plugins/serializers"
)

// The headers of a remote-write request (remote write 1.0), which outputs.http sets for this
// format unless headers overrides them.
const (
	ContentType     = "application/x-protobuf"
	ContentEncoding = "snappy"
	VersionHeader   = "X-Prometheus-Remote-Write-Version"
	Version         = "0.1.0"
)

// ErrNoSamples means no field of the metric makes a sample; it reaches callers wrapped in a
// *morse.PermanentError with Reason morse.ReasonSerialize, with the last problem found.
var ErrNoSamples = errors.New("no field makes a Prometheus sample")

// Options are Telegraf's prometheusremotewrite serializer options, under the keys it shares
// with the prometheus serializer.
type Options struct {
	// SortMetrics (prometheus_sort_metrics) writes the series in Telegraf's order: by
	// number of labels, then by label names and values.
	SortMetrics bool `toml:"prometheus_sort_metrics"`
	// StringAsLabel (prometheus_string_as_label) makes string fields labels; a tag of the
	// same name wins.
	StringAsLabel bool `toml:"prometheus_string_as_label"`
}

// Serializer writes remote-write requests. It keeps its scratch space in a pool, so one
// Serializer may be used by many goroutines at once.
type Serializer struct {
	o    Options
	pool sync.Pool // *collector
}

// New returns a Serializer.
func New(o Options) *Serializer { return &Serializer{o: o} }

var _ serializers.BatchSerializer = (*Serializer)(nil)

// AppendMetric appends a request of m alone, as Telegraf's Serialize does.
func (s *Serializer) AppendMetric(dst []byte, m morse.Metric) ([]byte, error) {
	return s.AppendBatch(dst, []morse.Metric{m})
}

// AppendBatch appends one request of the whole batch. A metric of which no field makes a
// sample is reported in a *serializers.Error; when none does, nothing is appended.
func (s *Serializer) AppendBatch(dst []byte, batch []morse.Metric) ([]byte, error) {
	c := s.get()
	defer s.put(c)
	var failed *serializers.Error // allocated only on a failure
	c.inferTypes(batch)
	for i := range batch {
		if n, why := c.add(batch[i]); n == 0 {
			failed = failed.With(i, morse.Permanent(morse.ReasonSerialize,
				fmt.Errorf("prometheusremotewrite: measurement %q: %w: %v", batch[i].Name(), ErrNoSamples, why)))
		}
	}
	if len(c.series) == 0 {
		return dst, failed.Err()
	}
	if s.o.SortMetrics {
		c.sortSeries()
	}
	c.pb = c.encode(c.pb[:0])
	dst = appendSnappy(dst, c.pb)
	return dst, failed.Err()
}

// appendSnappy appends src compressed in snappy's block format to dst. s2's EncodeSnappy
// writes that format (any snappy decoder reads it: Prometheus's, VictoriaMetrics') at
// about twice the speed of github.com/golang/snappy, the encoder Telegraf uses; its bytes
// differ from Telegraf's, the message they decode to does not.
func appendSnappy(dst, src []byte) []byte {
	n := len(dst)
	need := s2.MaxEncodedLen(len(src))
	if need < 0 {
		// Above 4 GiB: a batch that large is not made (outputs bound it far below).
		panic(s2.ErrTooLarge)
	}
	dst = slices.Grow(dst, need)
	enc := s2.EncodeSnappy(dst[n:n+need], src)
	return dst[:n+len(enc)]
}

// maxKept bounds the scratch kept in the pool: a collector that grew for an unusually large
// batch is left to the garbage collector.
const maxKept = 8 << 20

func (s *Serializer) get() *collector {
	if c, ok := s.pool.Get().(*collector); ok {
		return c
	}
	return newCollector(s.o)
}

func (s *Serializer) put(c *collector) {
	if c.size() > maxKept {
		return
	}
	c.reset()
	s.pool.Put(c)
}
