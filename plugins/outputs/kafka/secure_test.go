package kafka

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
)

// TestSecureBroker runs against a broker with SASL users, TLS with a client certificate, the
// authorizer, and no topic auto-creation: every way in, and the failures that an operator
// fixes while the data waits, which must therefore be retried.
func TestSecureBroker(t *testing.T) {
	t.Parallel()
	srv := startKafka(t, testserver.KafkaOptions{
		Users:              []testserver.KafkaUser{{Name: testserver.KafkaAdmin, Password: "admin-secret"}, {Name: "bob", Password: "bob-secret"}},
		TLS:                true,
		TLSClientAuth:      "required",
		Authorizer:         true,
		NoAutoCreateTopics: true,
	})
	srv.CreateTopic(t, "secure", 1, nil)
	t.Run("logins", func(t *testing.T) { testLogins(t, srv) })
	t.Run("retried until fixed", func(t *testing.T) { testFixedByOperator(t, srv) })
	// Every write that succeeded is there once; none that failed is.
	got := decode(t, "influx", srv.ReadTopic(t, "secure"))
	require.Len(t, got, 8)
}

func one(v float64) []morse.Metric { return []morse.Metric{metric("m", nil, map[string]any{"v": v})} }

// testLogins: SASL PLAIN and SCRAM over plaintext and TLS, a client certificate, and a
// wrong password and an unknown CA refused at Connect. Seven metrics reach "secure".
func testLogins(t *testing.T, srv *testserver.Kafka) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, overTLS := range []bool{false, true} {
			name := mech
			if overTLS {
				name += " over TLS"
			}
			t.Run(name, func(t *testing.T) {
				addr := srv.SASLAddr()
				if overTLS {
					addr = srv.SASLTLSAddr()
				}
				k := connect(t, addr, func(k *Kafka) {
					k.Topic, k.SASLMechanism = "secure", mech
					k.SASLUsername, k.SASLPassword = testserver.KafkaAdmin, "admin-secret"
					if overTLS {
						k.Config.CA = srv.CAFile()
					}
				})
				require.NoError(t, write(t, k, one(1)))
			})
		}
	}

	t.Run("TLS client certificate", func(t *testing.T) {
		k := connect(t, srv.TLSAddr(), func(k *Kafka) {
			k.Topic, k.Config.CA, k.Config.Cert, k.Config.Key = "secure", srv.CAFile(), srv.ClientCertFile(), srv.ClientKeyFile()
		})
		require.NoError(t, write(t, k, one(2)))
	})

	t.Run("connect refused", func(t *testing.T) {
		for name, edit := range map[string]func(*Kafka){
			"wrong password": func(k *Kafka) {
				k.Brokers, k.SASLUsername, k.SASLPassword = []string{srv.SASLAddr()}, testserver.KafkaAdmin, "wrong"
			},
			"unknown CA": func(k *Kafka) { k.Brokers, k.EnableTLS = []string{srv.SASLTLSAddr()}, ptr(true) },
		} {
			k := New()
			k.Timeout = morse.Duration(5 * time.Second)
			k.SetLogger(slog.New(slog.NewTextHandler(logWriter{t}, nil)))
			edit(k)
			require.NoError(t, k.Validate())
			require.NoError(t, k.Init())
			require.Error(t, k.Connect(t.Context()), name)
		}
	})
}

// testFixedByOperator: failures that an operator fixes while the data waits are retryable,
// and the write goes through once fixed. One metric reaches "secure".
func testFixedByOperator(t *testing.T, srv *testserver.Kafka) {
	t.Run("unknown topic is retried until it exists", func(t *testing.T) {
		k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic = "created-later" })
		err := write(t, k, one(3))
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
		require.ErrorContains(t, err, "UNKNOWN_TOPIC_OR_PARTITION")
		srv.CreateTopic(t, "created-later", 1, nil)
		_, err = writeUntilSettled(t, k, one(3), 100*time.Millisecond)
		require.NoError(t, err)
		require.Len(t, srv.WaitRecords(t, "created-later", 1), 1)
	})

	t.Run("records tried alone keep those to retry", func(t *testing.T) {
		// 30 records together pass the topic's max.message.bytes, so the broker refuses
		// their batch and they are tried one at a time; the one for a topic that does not
		// exist yet must go along, to be retried, not be forgotten (and counted dropped).
		limit := "1500"
		srv.CreateTopic(t, "small-batches", 1, map[string]*string{"max.message.bytes": &limit})
		k := connect(t, srv.Addr(), func(k *Kafka) { k.Topic, k.TopicTag = "small-batches", "dest" })
		var ms []morse.Metric
		for i := range 30 {
			ms = append(ms, metric("small", nil, map[string]any{"i": int64(i), "pad": strings.Repeat("p", 60)}))
		}
		ms = append(ms, metric("later", map[string]string{"dest": "created-later-too"}, map[string]any{"v": 1.0}))
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		err := k.Write(ctx, ms)
		cancel()
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
		srv.CreateTopic(t, "created-later-too", 1, nil)
		_, err = writeUntilSettled(t, k, ms, 100*time.Millisecond)
		require.NoError(t, err)
		require.Len(t, srv.WaitRecords(t, "created-later-too", 1), 1)
	})

	t.Run("authorization is retried until granted", func(t *testing.T) {
		k := connect(t, srv.SASLAddr(), func(k *Kafka) {
			k.Topic, k.SASLUsername, k.SASLPassword = "secure", "bob", "bob-secret"
		})
		err := write(t, k, one(4))
		require.Equal(t, morse.OutcomeRetry, morse.Classify(err), "%v", err)
		require.ErrorContains(t, err, "AUTHORIZATION_FAILED")
		require.ErrorIs(t, err, morse.ErrUnauthorized, "unauthorized_retry_max_age applies")
		acl := kadm.NewACLs().Allow("User:bob").Topics("secure").
			Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res, err := srv.Admin(t).CreateACLs(ctx, acl)
		require.NoError(t, err)
		for _, r := range res {
			require.NoError(t, r.Err)
		}
		_, err = writeUntilSettled(t, k, one(4), 100*time.Millisecond)
		require.NoError(t, err)
	})
}

func ptr[T any](v T) *T { return &v }
