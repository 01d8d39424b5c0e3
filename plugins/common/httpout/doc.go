// Package httpout is what morse's outputs that write over HTTP share, as Telegraf's
// plugins/common/http is for its own. Named httpout rather than http so that it can be
// imported beside net/http without renaming either.
//
// It offers, by file:
//
//   - client.go: the transport, from Telegraf's option values (http_proxy, local_address,
//     the HTTP/2 health check, the TLS of plugins/common/tlsclient), and the checks of the
//     per-request options timeout, content_encoding and http_headers.
//   - request.go: NewRequest, a request whose in-memory body the transport's connections
//     write in one piece.
//   - body.go: Body, the reusable buffers of one write's body (serialized by the output's
//     own serializer, gzipped on demand), and AppendGzip.
//   - retryafter.go: RetryAfter, a server's Retry-After as a bounded wait.
//   - failover.go: Failover, which of several URLs a write starts at.
//   - route.go: Groups, a batch split by a key (a database, a bucket) with each metric's
//     position kept.
//   - tally.go: Tally, Each, EachGroup and Halves, which add up the outcomes of the pieces
//     of a split batch into one exact result for it.
//
// An output writes itself what is its server's own: its options struct (with Telegraf's
// names for its plugin), the URL and query of a write, its headers and credentials, how it
// reads an answer's body and which answers mean what (its classify), and its own error
// type. The package knows no serializer and no server.
package httpout
