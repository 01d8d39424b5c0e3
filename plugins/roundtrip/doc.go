// Package roundtrip holds no code: its tests write metrics with a serializer of
// plugins/serializers and read them back with the parser of plugins/parsers configured as a
// Telegraf user would configure it for that serializer's output, and check what survives
// and what each format cannot hold.
//
// The round trips that stay within one format package are beside it: influx
// (plugins/serializers/influx TestRoundTrip*), graphite (plugins/serializers/graphite
// TestRoundTrip), morse's JSON shape through plugins/parsers/metricjson and MessagePack
// (TestRoundTrip in plugins/serializers/json and plugins/serializers/msgpack). Here are csv,
// prometheus, and json read by Telegraf's json and json_v2 parsers. carbon2 and
// splunkmetric have no parser.
package roundtrip
