// Package influxquery is a client for the /query endpoint of InfluxDB 1.x.
//
// It asks for MessagePack (Accept: application/x-msgpack), which keeps integers, floats and
// times apart and decodes faster than JSON, and reads JSON when that is what the server
// answers. A result comes row by row (Series, boxed values) or, with WithColumnar, column by
// column (ColumnarSeries, one typed slice per column). A chunked answer is merged back into
// one Response as it is decoded.
//
// It imports nothing of morse, only the standard library and a MessagePack decoder, so any
// program can use it, and so can the tests of every morse package (internal/testserver reads
// InfluxDB back with it) without an import cycle. The InfluxDB output creates its databases
// with it, and morse-bench load --verify counts what arrived.
package influxquery
