package influxdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/influxquery"
	"github.com/morse-agent/morse/plugins/common/httpout"
)

// A request to InfluxDB 1.x reports only one of its failures: the points writer of 1.6
// (coordinator.PointsWriter.WritePointsPrivileged) maps the points to shard groups, writes
// each shard, and answers with the first shard error it meets; "points beyond retention
// policy dropped=N" only when no shard failed; the parse errors only when the write
// succeeded. A batch with type conflicts and points older than the retention policy was
// answered "field type conflict ... dropped=2" while five points were lost.
//
// So the output sends one request per shard group. Within one shard group, the retention
// policy keeps all points or none (a point older than the policy is kept when another
// point of the request falls in the same shard group, see PointsWriter.MapShards), and a
// request writes one shard, so every answer counts all that it lost.

// hourBucket is the span a request stays within when the shard group duration is not known.
// Every shard group duration InfluxDB picks itself (1h, 1d, 7d), and any given in whole
// hours, is a multiple of it; time.Truncate counts from the same origin as InfluxDB's
// meta store (data.CreateShardGroup), so an hour never straddles two shard groups.
const hourBucket = time.Hour

// rpRefresh is how long the shard group durations of a database are trusted.
const rpRefresh = 10 * time.Minute

// rpInfo is what SHOW RETENTION POLICIES told of one database.
type rpInfo struct {
	sg      map[string]time.Duration // shard group duration by retention policy
	def     string                   // the default retention policy
	fetched time.Time
}

// shardGroupOf returns the cached shard group duration of key (0 when the server did not
// tell), and whether the server was asked less than rpRefresh ago.
func (o *InfluxDB) shardGroupOf(key routeKey, now time.Time) (time.Duration, bool) {
	o.dbMu.Lock()
	defer o.dbMu.Unlock()
	info := o.rps[key.db]
	if info == nil {
		return 0, false
	}
	rp := key.rp
	if rp == "" {
		rp = info.def
	}
	return info.sg[rp], now.Sub(info.fetched) < rpRefresh
}

// shardGroup returns the shard group duration of key, asking the server when the cache has
// no fresh one. When the server does not tell (no read privilege, InfluxDB 2, an unknown
// policy), an hour: never wider than a shard group InfluxDB makes, only more requests.
func (o *InfluxDB) shardGroup(ctx context.Context, key routeKey) time.Duration {
	if d, fresh := o.shardGroupOf(key, time.Now()); fresh {
		return cmp.Or(d, hourBucket)
	}
	info, err := o.showRetentionPolicies(ctx, key.db)
	o.dbMu.Lock()
	if err == nil {
		o.rps[key.db] = info
	} else if old := o.rps[key.db]; old != nil {
		old.fetched = time.Now() // keep what was known; ask again later
	} else {
		o.rps[key.db] = &rpInfo{fetched: time.Now()}
	}
	o.dbMu.Unlock()
	if err != nil {
		o.rpWarn.Log(o.logger(), slog.LevelWarn, "cannot read the retention policies; writing one request per hour of data",
			"database", key.db, "error", err)
	}
	d, _ := o.shardGroupOf(key, time.Now())
	return cmp.Or(d, hourBucket)
}

// showRetentionPolicies reads the shard group durations of db's retention policies from the
// first URL that answers.
func (o *InfluxDB) showRetentionPolicies(ctx context.Context, db string) (*rpInfo, error) {
	var resp *influxquery.Response
	idx, failed := o.failover.Do(ctx, len(o.targets), func(i int) error {
		var err error
		resp, err = o.targets[i].query.Query(ctx, "SHOW RETENTION POLICIES ON "+influxquery.QuoteIdent(db))
		if _, ok := errors.AsType[*influxquery.QueryError](err); ok {
			return nil // answered: another URL of the same cluster would say the same
		}
		return err
	})
	if idx < 0 {
		return nil, failed
	}
	if resp == nil {
		return nil, errors.New("no answer")
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	return parseRetentionPolicies(resp)
}

// parseRetentionPolicies reads the columns name, shardGroupDuration and default.
func parseRetentionPolicies(resp *influxquery.Response) (*rpInfo, error) {
	info := &rpInfo{sg: map[string]time.Duration{}, fetched: time.Now()}
	for _, res := range resp.Results {
		for _, s := range res.Series {
			col := map[string]int{}
			for j, c := range s.Columns {
				col[c] = j
			}
			iName, ok1 := col["name"]
			iSG, ok2 := col["shardGroupDuration"]
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("SHOW RETENTION POLICIES: unexpected columns %v", s.Columns)
			}
			iDef, hasDef := col["default"]
			for _, row := range s.Values {
				name, _ := row[iName].(string)
				sgs, _ := row[iSG].(string)
				d, err := time.ParseDuration(sgs)
				if err != nil || d <= 0 {
					continue
				}
				info.sg[name] = d
				if isDef, _ := row[iDef].(bool); hasDef && isDef {
					info.def = name
				}
			}
		}
	}
	return info, nil
}

// writeByShardGroup writes metrics to key, one request per shard group, and adds up the
// answers (see the comment at the top of this file). A batch within one hour, the common
// case, is one request and asks the server nothing.
func (o *InfluxDB) writeByShardGroup(ctx context.Context, s *writeScratch, key routeKey, metrics []morse.Metric) error {
	if o.InfluxOmitTimestamp {
		return o.writeSplit(ctx, s, key, metrics, true) // the server stamps them all: one group
	}
	now := time.Now()
	span := hourBucket
	if d, _ := o.shardGroupOf(key, now); d > 0 && d%hourBucket != 0 {
		span = d // a shard duration in minutes: an hour may straddle two of its groups
	}
	if oneBucket(metrics, span, now) {
		return o.writeSplit(ctx, s, key, metrics, true)
	}
	span = o.shardGroup(ctx, key)
	if oneBucket(metrics, span, now) {
		return o.writeSplit(ctx, s, key, metrics, true)
	}
	g := &s.shards
	g.Reset()
	defer g.Reset()
	for _, m := range metrics {
		g.AddPosition(bucketOf(m, span, now))
	}
	groups := g.Views(metrics)
	o.logger().Debug("batch spans several shard groups; one request each", "groups", len(groups), "shard_group_duration", span)
	return httpout.EachGroup(groups, len(metrics), func(_ int64, ms []morse.Metric) error {
		return o.writeSplit(ctx, s, key, ms, true)
	})
}

// bucketOf is the start of the shard group of m's time, in nanoseconds. A metric without a
// time is stamped by the server when it arrives, now.
func bucketOf(m morse.Metric, span time.Duration, now time.Time) int64 {
	t := m.Time()
	if t.IsZero() {
		t = now
	}
	return t.Truncate(span).UnixNano()
}

// oneBucket reports whether every metric falls in the same shard group. It truncates one
// time only and compares the others as integers: it runs on every write.
func oneBucket(metrics []morse.Metric, span time.Duration, now time.Time) bool {
	if len(metrics) < 2 {
		return true
	}
	start := bucketOf(metrics[0], span, now)
	for _, m := range metrics[1:] {
		t := m.Time()
		if t.IsZero() {
			t = now
		}
		// As unsigned, the difference is exact whenever ns >= start, and never overflows.
		if ns := t.UnixNano(); ns < start || uint64(ns)-uint64(start) >= uint64(span) {
			return false
		}
	}
	return true
}

// completeRetention completes the answer "points beyond retention policy dropped=N" to a
// request of lines lines: when the request lies within one shard group, the policy dropped
// the whole group, so nothing was stored, and the lines the server left out of N are the
// ones it could not parse (it reports parse errors only when the write succeeded). The
// shard group duration is made sure of first, since this answer is rare and a request over
// two groups would be miscounted.
func (o *InfluxDB) completeRetention(ctx context.Context, key routeKey, metrics []morse.Metric, err error, lines int) error {
	pw, ok := errors.AsType[*morse.PartialWriteError](err)
	if !ok || pw.Reason != morse.ReasonBeyondRetention || len(pw.More) > 0 || pw.Dropped >= lines {
		return err
	}
	if !oneBucket(metrics, o.shardGroup(ctx, key), time.Now()) {
		return err
	}
	return &morse.PartialWriteError{
		Dropped: pw.Dropped, Reason: pw.Reason, Err: pw.Err,
		More: []*morse.PartialWriteError{{Dropped: lines - pw.Dropped, Reason: morse.ReasonUnableToParse}},
	}
}
