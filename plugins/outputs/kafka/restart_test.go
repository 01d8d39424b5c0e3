package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
)

// TestBrokerRestart takes the broker away twice during a stream of batches and starts it
// again on the same port: with SIGKILL while a write is under way, and with a clean stop
// between two writes. The writer does what the agent does: it writes a batch again after a
// retryable error. With idempotent writes and all acks, every metric is then in the topic
// exactly once: nothing lost, nothing twice.
//
// In both cases a write is left holding records it sent without an answer: after the kill,
// the request in flight; after the stop, the next request, which the client writes into a
// connection it does not yet know is closed. The client never gives such records up, since
// the broker may have stored them: the write waits, the client sends them again once the
// broker is back, and idempotence keeps the broker from storing them twice.
func TestBrokerRestart(t *testing.T) {
	t.Parallel()
	srv := startKafka(t, testserver.KafkaOptions{})
	srv.CreateTopic(t, "restart", 3, nil)
	k := connect(t, srv.Addr(), func(k *Kafka) {
		k.Topic, k.RoutingTag = "restart", "host"
		k.Timeout = morse.Duration(3 * time.Second)
	})
	const batches, size = 40, 500
	var retried atomic.Int64
	killPoint, stopPoint, resume := make(chan struct{}), make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for b := range batches {
			if err := writeRetrying(t.Context(), k, seqBatch(b, size), &retried); err != nil {
				done <- fmt.Errorf("batch %d: %w", b, err)
				return
			}
			switch b {
			case batches / 4:
				close(killPoint) // and write on: the kill comes during the next write
			case batches / 2:
				close(stopPoint)
				<-resume // the next write starts after the broker stopped
			}
		}
	}()
	// held waits until the writer holds records, for longer than twice the write timeout.
	held := func(since time.Time) {
		require.Eventually(t, func() bool {
			return k.client().BufferedProduceRecords() > 0 && time.Since(since) > 2*time.Duration(k.Timeout)
		}, time.Minute, 10*time.Millisecond)
	}

	<-killPoint
	srv.Kill(t)
	held(time.Now())
	srv.Restart(t)
	t.Logf("broker back after SIGKILL in %s", srv.Startup)

	<-stopPoint
	srv.Stop(t)
	stopped := time.Now()
	close(resume)
	held(stopped)
	srv.Restart(t)
	t.Logf("broker back after a clean stop in %s", srv.Startup)
	require.NoError(t, <-done)

	requireExactlyOnce(t, srv, "restart", batches*size)
	t.Logf("%d retryable writes while the broker was away", retried.Load())
}

// requireExactlyOnce checks that the topic holds the metrics numbered 0 to n-1 (field seq),
// each exactly once.
func requireExactlyOnce(t *testing.T, srv *testserver.Kafka, topic string, n int) {
	t.Helper()
	count := map[int64]int{}
	for _, p := range decode(t, "influx", srv.WaitRecords(t, topic, n)) {
		for _, f := range p.Fields {
			if f.Key == "seq" {
				count[f.Value.Int()]++
			}
		}
	}
	require.Len(t, count, n, "every metric arrived")
	for seq, c := range count {
		require.Equal(t, 1, c, "metric %d", seq)
	}
	total, _ := srv.EndOffsets(t, topic)
	require.Equal(t, int64(n), total, "no message twice")
}

// TestBrokerDown: with no broker to talk to, Connect fails (the agent retries it), and a
// write whose records no broker takes fails as retryable once the timeout has passed.
func TestBrokerDown(t *testing.T) {
	t.Parallel()
	dead := testutil.FreeAddr(t) // nothing listens there

	k := New()
	k.Brokers, k.Timeout = []string{dead}, morse.Duration(2*time.Second)
	require.NoError(t, k.Validate())
	require.NoError(t, k.Init())
	err := k.Connect(t.Context())
	require.ErrorContains(t, err, "no broker of "+dead+" answers")

	// Clients made without Connect's check, as if the broker had gone after it. The records
	// fail at the timeout, or earlier when the client gave up after max_retry tries to
	// learn the topic's partitions; both are retried.
	for _, tc := range []struct {
		maxRetry int
		err      string
	}{
		{100, "no broker took the records within the timeout (2s)"},
		{0, "connection refused"},
	} {
		k.MaxRetry = tc.maxRetry
		opts, err := k.clientOptions()
		require.NoError(t, err)
		cl, err := kgo.NewClient(opts...)
		require.NoError(t, err)
		k.cl = cl
		k.w.init(k)
		start := time.Now()
		err = write(t, k, seqBatch(0, 10))
		require.NoError(t, k.Close())
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
		require.ErrorContains(t, err, tc.err)
		require.Less(t, time.Since(start), 30*time.Second)
	}
}

// seqBatch is batch b of metrics numbered from b*size, on 8 hosts.
func seqBatch(b, size int) []morse.Metric {
	ms := make([]morse.Metric, size)
	for i := range ms {
		seq := int64(b*size + i)
		ms[i] = metric("restart", map[string]string{"host": fmt.Sprintf("h%d", seq%8)}, map[string]any{"seq": seq, "v": float64(seq) / 3})
	}
	return ms
}

// writeRetrying writes batch again after each retryable error, as the agent does, pausing a
// little in between, for at most three minutes. It counts the retryable errors.
func writeRetrying(ctx context.Context, k *Kafka, batch []morse.Metric, retried *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		err := k.Write(ctx, batch)
		if morse.Classify(err) != morse.OutcomeRetry {
			return err
		}
		retried.Add(1)
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		}
	}
}
