package influxquery

import "time"

// What the tests of package influxquery_test need from inside. Those tests run against a real
// InfluxDB, which internal/testserver starts, and testserver imports this package, so they
// cannot be tests of the package itself.
var (
	TimeToNanos         = timeToNanos
	EncodeMsgpackAnswer = encodeMsgpackAnswer
	EncodeJSONAnswer    = encodeJSONAnswer
)

// FixtureSeries is a series of an answer built in a test.
type FixtureSeries = fixtureSeries

// EpochOf returns the unit of the times that opts ask for.
func EpochOf(opts []QueryOption) time.Duration {
	var c queryConfig
	for _, o := range opts {
		o(&c)
	}
	return epochUnits[c.epoch]
}
