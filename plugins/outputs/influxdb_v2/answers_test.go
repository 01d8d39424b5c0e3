package influxdbv2

// The answers of InfluxDB 2 and 3 that no local server can give, as their sources write them.
// testdata/influxdb/v2-answers.md says where each comes from and why it is classified so.
const (
	// InfluxDB v2.9.1 http/write_handler.go wraps the tsdb.PartialWriteError of
	// tsdb/field_validator.go and tsdb/shard.go as "unprocessable entity" (422); the body is
	// kit/transport/http/error_handler.go's {"code","message"}.
	v2TypeConflict = `{"code":"unprocessable entity","message":"failure writing points to database: partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1"}`
	// v2.9.1 v1/coordinator/points_writer.go: SummariseDropped and DroppedPoint.String.
	v2Retention = `{"code":"unprocessable entity","message":"failure writing points to database: partial write: dropped 2 points outside retention policy of duration 1h0m0s - oldest point m at 2020-01-01T00:00:00Z dropped because it violates a Retention Policy Lower Bound at 2026-11-23T18:00:00Z, newest point m at 2020-01-01T00:00:01Z dropped because it violates a Retention Policy Lower Bound at 2026-11-23T18:00:00Z dropped=2 for database: 0a1b2c3d4e5f6a7b for retention policy: autogen"}`
	// v2.9.1 tsdb/field_validator.go: a string field over 64 KiB.
	v2TooLong = `{"code":"unprocessable entity","message":"failure writing points to database: partial write: input field \"s\" on measurement \"m\" is too long, 70000 > 65536 dropped=1"}`
	// v2.9.1 tsdb/field_validator.go: a field named "time" is stripped, nothing dropped.
	v2TimeField = `{"code":"unprocessable entity","message":"failure writing points to database: partial write: invalid field name: input field \"time\" on measurement \"m\" is invalid. Field \"time\" has been stripped from point. dropped=0 for database: 0a1b2c3d4e5f6a7b for retention policy: autogen"}`
	// v2.9.1 tenant/error_bucket.go ErrBucketNotFoundByName, via http/write_handler.go findBucket.
	v2BucketNotFound = `{"code":"not found","message":"bucket \"nope\" not found"}`
	// v2.9.1 tenant/error_org.go.
	v2OrgNotFound = `{"code":"not found","message":"organization name \"nope\" not found"}`
	// v2.9.1 models/points.go ParsePointsWithPrecision, as http/points/points_parser.go
	// returns it: code "invalid" and no Msg of its own. Nothing of the request is stored.
	v2ParseError = `{"code":"invalid","message":"unable to parse 'm v=1 abc': bad timestamp\nunable to parse 'm v=': missing field value"}`
	// v2.9.1 http/points/points_parser.go ErrMaxBatchSizeExceeded as "request too large" (413).
	v2TooLarge = `{"code":"request too large","message":"unable to read data: points batch is too large"}`
	// v2.9.1 http/errors.go UnauthorizedError (401).
	v2Unauthorized = `{"code":"unauthorized","message":"unauthorized access"}`
	// v2.9.1 http/write_handler.go checkBucketWritePermissions (403).
	v2Forbidden = `{"code":"forbidden","message":"insufficient permissions for write"}`
	// v2.9.1 http/write_handler.go: any other error of the points writer (500).
	v2Engine = `{"code":"internal error","message":"unexpected error writing points to database: engine: cache-max-memory-size exceeded: (1073741900/1073741824)"}`
	// v2.0.0 to v2.0.3 http/write_handler.go: a partial write of the engine wrapped as
	// EInternal (500), "unexpected error writing points to database"; 422 since v2.0.4.
	v203TypeConflict = `{"code":"internal error","message":"unexpected error writing points to database: partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1"}`
	// v2.9.1 http/points/points_parser.go: gzip.ErrChecksum as "invalid".
	v2BadChecksum = `{"code":"invalid","message":"unable to read data: gzip: invalid checksum"}`

	// InfluxDB v3.9.6 influxdb3_server/src/http.rs: on /api/v2/write, V2WriteApiError's
	// to_code has no arm for PartialLpWrite, so a write with rejected lines is a 500
	// "internal error" that names none of them (3.5 and later).
	v3PartialUncounted = `{"code":"internal error","message":"partial write of line protocol occurred"}`
	// InfluxDB 3.0 to 3.4, influxdb3_server/src/http.rs IntoResponse for Error: every rejected
	// line, its message (influxdb3_catalog/src/error.rs InvalidColumnType,
	// core/influxdb_line_protocol) and its first 20 bytes (influxdb3_write/src/lib.rs).
	v3PartialListed = `{"error":"partial write of line protocol occurred","data":[` +
		`{"error_message":"invalid column type for column 'v', expected iox::column_type::field::float, got iox::column_type::field::string","line_number":2,"original_line":"m v=\"x\" 17000000000"},` +
		`{"error_message":"No fields were provided","line_number":5,"original_line":"m 1700000000000000"}]}`
	// v3.0 to 3.4, the same with a schema limit hit (then 422).
	v3PartialLimit = `{"error":"partial write of line protocol occurred","data":[{"error_message":"Update to schema would exceed number of columns per table limit of 500 columns","line_number":1,"original_line":"wide c501=1 170000000"}]}`
	// v3.9.6 influxdb3_server/src/http.rs IntoResponse for V2WriteApiError: opaque 401.
	v3Unauthorized = `{"code":"unauthorized","message":"unauthorized access"}`

	// InfluxDB 1.8 serves /api/v2/write with 1.x bodies (testdata/influxdb/classifier.md).
	v18TypeConflict = `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=1"}`
	v18NoDatabase   = `{"error":"database not found: \"nope\""}`
	v18ParsePartial = `{"error":"partial write: unable to parse 'p v=2 garbage': bad timestamp dropped=0"}`
	// 1.x names each line it could not parse on a line of its own, and never counts them in N.
	v18ParsePartial2 = `{"error":"partial write: unable to parse 'p v=2 garbage': bad timestamp\nunable to parse 'p v=': missing field value dropped=0"}`
	// 1.x with no line parsed at all: nothing stored, and nothing left to store.
	v18ParseError = `{"error":"unable to parse 'p v=': missing field value"}`
	// 1.x refusing a whole write for a type conflict (outputs.influxdb's classifier).
	v18ConflictRefused = `{"error":"field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float"}`

	// morse's influxdb_listener (plugins/inputs/influxdb_listener/write.go outcome.message):
	// dropped=N counts every rejected line, and the first is quoted after "line K: ".
	listenerPartial = `{"error":"partial write: line 4: unable to parse 'm v=': missing field value (1 of 10 lines rejected) dropped=1"}`
	listenerRefused = `{"error":"unable to parse 'm v=': missing field value (line 1; 10 of 10 lines rejected)"}`
)
