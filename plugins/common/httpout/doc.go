// Package httpout is what morse's outputs that write over HTTP share, as Telegraf's
// plugins/common/http is for its own. It is named httpout rather than http so that it can be
// imported beside net/http without renaming either.
//
// It offers, by file:
//
//   - config.go: ClientConfig, Telegraf's client keys (timeout, idle_conn_timeout,
//     max_idle_conn, max_idle_conn_per_host, response_timeout, use_system_proxy,
//     http_proxy_url and the tls_* keys of plugins/common/tlsclient) for an output to embed,
//     and the client they make.
//   - client.go: NewTransport from option values, for the outputs whose keys are their own
//     (http_proxy, local_address, the HTTP/2 health check), and ValidateRequest, the check of
//     timeout, content_encoding and http_headers.
//   - request.go: NewRequest, a request whose in-memory body the transport's connections
//     write in one piece; SetHeaders, the configured headers; Auth, basic or token
//     credentials.
//   - body.go: Body, the reusable buffers of one write's body, serialized by the output's
//     own serializer and gzipped on demand; AppendGzip. The socket_writer output builds its
//     batches with them too.
//   - retryafter.go: RetryAfter, a server's Retry-After as a wait of at most MaxRetryAfter.
//   - classify.go: what a status alone means (ClassOf, Classify), as the error types of
//     package morse: morse.Retryable with the server's wait, morse.Permanent, TooLarge for a
//     413 (ErrTooLarge); Unauthorized for an error type's match of morse.ErrUnauthorized;
//     StatusError, the error of a server that says no more than a status and a message, and
//     NewStatusError; Message, a server's message or its status's text; ReadAnswer, an answer's body read within a bound and drained.
//   - send.go: Send, one request and its answer within a timeout of its own; WriteTimeout,
//     the bound of a write of several such requests; RedactURL, a URL without credentials.
//   - failover.go: Failover, which of several URLs a write starts at, and Post, one request
//     sent to the first URL that answers, with the failover logged and the error of none.
//   - route.go: Groups, a batch split by a key with each metric's position kept; Split, a
//     batch written one group at a time, with TagOr for a key of tags (database_tag,
//     bucket_tag).
//   - tally.go: Tally, Each, EachGroup and Halves, which add up the outcomes of the pieces of
//     a split batch (groups, halves) into one result for the batch with exact counts;
//     Reasons, the partial write of metrics a server refused one by one, a part per reason.
//
// An output writes itself what is its server's own: its options struct (Telegraf's keys for
// that plugin), the URL and query of a write, the headers that say what the body is, how it
// decodes an answer's body and what the server's words mean (its classify, which falls back
// on ClassOf), and its error type. The package knows no serializer and no server.
package httpout
