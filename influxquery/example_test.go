package influxquery_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/morse-agent/morse/influxquery"
)

// influxURL is where the example's InfluxDB 1.x listens. The example needs a server, so go
// test only compiles it; TestQueryClient runs it against a real InfluxDB 1.6.7 and checks
// what it prints.
var influxURL = "http://127.0.0.1:8086"

// The example reads what the cpu input wrote to the database "telegraf": the last idle
// percentage of each host row by row, then one host's points column by column, and finally
// shows how a statement that fails is reported.
func Example() {
	ctx := context.Background()
	c, err := influxquery.NewClient(influxquery.ClientOptions{URL: influxURL, Timeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Row by row. Each value is typed as InfluxDB keeps it: MessagePack, which the client
	// asks for, tells the float 88 from the integer 88, which JSON cannot.
	resp, err := c.Query(ctx, "SELECT last(usage_idle) FROM cpu GROUP BY host",
		influxquery.WithDatabase("telegraf"))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range resp.Results[0].Series {
		row := s.Values[0] // time, last
		fmt.Printf("%s: idle %v%% at %s\n", s.Tags["host"], row[1], row[0].(time.Time).Format(time.RFC3339))
	}

	// Column by column: one typed slice per column, and the times in nanoseconds, with no
	// boxed value per point.
	resp, err = c.Query(ctx, "SELECT usage_idle, usage_user FROM cpu WHERE host = 'a'",
		influxquery.WithDatabase("telegraf"), influxquery.WithColumnar())
	if err != nil {
		log.Fatal(err)
	}
	s := resp.Results[0].Columnar[0]
	idle, user := s.Column("usage_idle"), s.Column("usage_user")
	fmt.Printf("host a: %d points, columns of type %v\n", s.Len(), idle.Type)
	for i := range s.Len() {
		fmt.Printf("%s idle %v user %v\n", s.TimeAt(i).Format(time.RFC3339), idle.Floats[i], user.Floats[i])
	}

	// A statement that fails is a *QueryError; the other statements' results still come.
	resp, err = c.Query(ctx, "SHOW DATABASES; SHOW TAG KEYS ON nope")
	var qe *influxquery.QueryError
	if errors.As(err, &qe) {
		fmt.Printf("%d: %s (%d results)\n", qe.StatusCode, qe.Message, len(resp.Results))
	}
}
