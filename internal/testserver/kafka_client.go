package testserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaOpTimeout bounds one admin call or read of the helpers below.
const kafkaOpTimeout = 60 * time.Second

// Client returns a franz-go client on the PLAINTEXT listener, closed when the test ends.
// Its metadata may be refreshed every 100 ms instead of franz-go's 5 s, so that a topic
// created a moment ago is found at once.
func (k *Kafka) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(k.Addr()), kgo.MetadataMinAge(100 * time.Millisecond)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns the broker's admin client on the PLAINTEXT listener, made on first use and
// closed with the broker. It reconnects by itself after a Restart.
func (k *Kafka) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	if k.admin == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.MetadataMinAge(100*time.Millisecond))
		require.NoError(t, err)
		k.admin = kadm.NewClient(cl)
	}
	return k.admin
}

// closeAdmin closes the admin client, if one was made.
func (k *Kafka) closeAdmin() {
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	if k.admin != nil {
		k.admin.Close()
		k.admin = nil
	}
}

// TLSConfig trusts the broker's CA; nil unless KafkaOptions.TLS.
func (k *Kafka) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	if !k.opts.TLS {
		return nil
	}
	ca, err := os.ReadFile(k.CAFile())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// CreateTopic creates a topic with the given partitions and topic configs (nil for the
// broker's defaults) and waits until every partition has a leader.
func (k *Kafka) CreateTopic(t testing.TB, topic string, partitions int, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	adm := k.Admin(t)
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, configs, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Err, "create topic %s", topic)
	require.Eventually(t, func() bool {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || td.Error() != nil {
			return false
		}
		d := td[topic]
		if len(d.Partitions) != partitions {
			return false
		}
		for _, p := range d.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		return true
	}, kafkaOpTimeout, 50*time.Millisecond, "topic %s has no leaders", topic)
}

// EndOffsets returns the sum over the topic's partitions of how many records each holds
// (end offset minus start offset), and the per-partition end offsets. A missing topic
// holds none. Without transactions every offset is one record, so the sum counts records
// exactly, without reading them.
func (k *Kafka) EndOffsets(t testing.TB, topic string) (total int64, ends map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	adm := k.Admin(t)
	endRes, err := adm.ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	startRes, err := adm.ListStartOffsets(ctx, topic)
	require.NoError(t, err)
	ends = map[int32]int64{}
	endRes.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			return // an unknown topic: nothing in it
		}
		ends[o.Partition] = o.Offset
		total += o.Offset
	})
	startRes.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			total -= o.Offset
		}
	})
	return total, ends
}

// ReadTopic reads every record the topic holds now, partition by partition in offset order,
// up to the end offsets seen at the call. It fails the test if that takes over a minute.
func (k *Kafka) ReadTopic(t testing.TB, topic string) []*kgo.Record {
	t.Helper()
	_, ends := k.EndOffsets(t, topic)
	parts := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			parts[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(parts) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaOpTimeout)
	defer cancel()
	var recs []*kgo.Record
	next := map[int32]int64{}
	for !reachedEnds(next, ends) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "read %s: %d records so far, want offsets %v", topic, len(recs), ends)
		fs.EachError(func(_ string, p int32, err error) { require.NoError(t, err, "fetch %s[%d]", topic, p) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				recs = append(recs, r)
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return recs
}

func reachedEnds(next, ends map[int32]int64) bool {
	for p, end := range ends {
		if end > 0 && next[p] < end {
			return false
		}
	}
	return true
}

// WaitRecords waits until the topic holds at least n records and returns them all.
func (k *Kafka) WaitRecords(t testing.TB, topic string, n int) []*kgo.Record {
	t.Helper()
	require.Eventually(t, func() bool {
		total, _ := k.EndOffsets(t, topic)
		return total >= int64(n)
	}, kafkaOpTimeout, 50*time.Millisecond, "topic %s never held %d records", topic, n)
	return k.ReadTopic(t, topic)
}
