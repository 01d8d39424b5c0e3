// Package influxquery is a client for the /query endpoint of InfluxDB 1.x.
//
// It asks for MessagePack (Accept: application/x-msgpack), which keeps integers, floats and
// times apart and decodes faster than JSON, and reads JSON when that is what the server
// answers. A result comes row by row (Series, boxed values) or, with WithColumnar, column by
// column (ColumnarSeries, one typed slice per column). A chunked answer is merged back into
// one Response as it is decoded.
//
// The InfluxDB output uses it to create databases, morse-load to count what arrived, and the
// tests to read back what they wrote.
package influxquery
