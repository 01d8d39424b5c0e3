package testserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// produce writes n records "<prefix>-<i>" to topic with acks=all and idempotence, and fails
// the test on any error.
func produce(t *testing.T, cl *kgo.Client, topic, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

func values(recs []*kgo.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func TestKafka(t *testing.T) {
	t.Parallel()
	k := StartKafka(t, KafkaOptions{})
	t.Logf("kafka ready at %s in %s (jars downloaded: %v)", k.Addr(), k.Startup, k.Fetched)
	require.True(t, strings.HasPrefix(k.Addr(), "127.0.0.1:"), k.Addr())
	// Kafka creates a topic when a metadata request that allows it names the topic;
	// franz-go allows it only when told to. The new topic answers "unknown" until its
	// partition has a leader, so those answers are waited out.
	cl := k.Client(t, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(-1))

	t.Run("auto-created topic round trip", func(t *testing.T) {
		produce(t, cl, "auto", "a", 3)
		total, ends := k.EndOffsets(t, "auto")
		require.Equal(t, int64(3), total)
		require.Equal(t, map[int32]int64{0: 3}, ends, "num.partitions is 1 by default")
		require.Equal(t, []string{"a-0", "a-1", "a-2"}, values(k.ReadTopic(t, "auto")))
	})

	t.Run("created topic with partitions", func(t *testing.T) {
		k.CreateTopic(t, "parts", 3, nil)
		produce(t, cl, "parts", "p", 30)
		_, ends := k.EndOffsets(t, "parts")
		require.Len(t, ends, 3)
		require.ElementsMatch(t, values(k.WaitRecords(t, "parts", 30)), values(k.ReadTopic(t, "parts")))
		require.Len(t, k.ReadTopic(t, "parts"), 30)
	})

	t.Run("a missing topic holds nothing", func(t *testing.T) {
		total, _ := k.EndOffsets(t, "never-written")
		require.Zero(t, total)
		require.Empty(t, k.ReadTopic(t, "never-written"))
	})

	t.Run("stop and restart keep ports and data", func(t *testing.T) {
		addr := k.Addr()
		began := time.Now()
		k.Stop(t)
		t.Logf("graceful stop in %s", time.Since(began))
		require.False(t, k.Running())
		k.Restart(t)
		t.Logf("warm restart (graceful stop before) in %s", k.Startup)
		require.Equal(t, addr, k.Addr())
		require.Equal(t, []string{"a-0", "a-1", "a-2"}, values(k.ReadTopic(t, "auto")))
		produce(t, cl, "auto", "b", 1) // the first client reconnects by itself
		require.Equal(t, []string{"a-0", "a-1", "a-2", "b-0"}, values(k.ReadTopic(t, "auto")))
	})

	t.Run("kill keeps acknowledged records", func(t *testing.T) {
		k.Kill(t)
		require.False(t, k.Running())
		k.Restart(t)
		t.Logf("restart after SIGKILL in %s", k.Startup)
		require.Equal(t, []string{"a-0", "a-1", "a-2", "b-0"}, values(k.ReadTopic(t, "auto")))
	})
}

// TestKafkaSecurity checks every way in that the outputs and inputs offer: SASL PLAIN and
// SCRAM over plaintext and TLS, TLS with a client certificate, and the authorizer; and a
// broker that creates no topics by itself.
func TestKafkaSecurity(t *testing.T) {
	t.Parallel()
	users := []KafkaUser{{Name: KafkaAdmin, Password: "admin-secret"}, {Name: "bob", Password: "bob-secret"}}
	k := StartKafka(t, KafkaOptions{Users: users, TLS: true, TLSClientAuth: "required", Authorizer: true,
		NoAutoCreateTopics: true, Partitions: 2})
	t.Logf("secured kafka ready in %s: SASL %s, TLS %s, SASL+TLS %s", k.Startup, k.SASLAddr(), k.TLSAddr(), k.SASLTLSAddr())

	t.Run("no auto-create", func(t *testing.T) {
		cl := k.Client(t, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(1))
		err := cl.ProduceSync(shortCtx(t), &kgo.Record{Topic: "absent", Value: []byte("x")}).FirstErr()
		require.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
		k.CreateTopic(t, "present", 2, nil)
		produce(t, cl, "present", "x", 4)
		total, ends := k.EndOffsets(t, "present")
		require.Equal(t, int64(4), total)
		require.Len(t, ends, 2)
	})
	k.CreateTopic(t, "secure", 1, nil)

	t.Run("SASL", func(t *testing.T) { testSASL(t, k) })
	t.Run("TLS client certificate", func(t *testing.T) { testClientCert(t, k) })
	t.Run("authorizer", func(t *testing.T) { testAuthorizer(t, k) })

	got := values(k.ReadTopic(t, "secure"))
	require.Contains(t, got, "mtls-0")
	require.Contains(t, got, "allowed")
	require.NotContains(t, got, "denied")
	require.NotContains(t, got, "x")
}

// testSASL logs in with every mechanism over plaintext and TLS, and with a wrong password.
func testSASL(t *testing.T, k *Kafka) {
	mechs := map[string]func(user, pass string) sasl.Mechanism{
		"PLAIN":         func(u, p string) sasl.Mechanism { return plain.Auth{User: u, Pass: p}.AsMechanism() },
		"SCRAM-SHA-256": func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha256Mechanism() },
		"SCRAM-SHA-512": func(u, p string) sasl.Mechanism { return scram.Auth{User: u, Pass: p}.AsSha512Mechanism() },
	}
	for name, mech := range mechs {
		for _, overTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s tls=%v", name, overTLS), func(t *testing.T) {
				addr, opts := k.SASLAddr(), []kgo.Opt{}
				if overTLS {
					addr, opts = k.SASLTLSAddr(), []kgo.Opt{kgo.DialTLSConfig(k.TLSConfig(t))}
				}
				cl := kafkaClient(t, addr, append(opts, kgo.SASL(mech(KafkaAdmin, "admin-secret")))...)
				produce(t, cl, "secure", name, 1)

				// A producer retries a failed login until its context ends; a ping
				// shows the broker's answer.
				bad := kafkaClient(t, addr, append(opts, kgo.SASL(mech(KafkaAdmin, "wrong")))...)
				require.ErrorIs(t, bad.Ping(shortCtx(t)), kerr.SaslAuthenticationFailed)
			})
		}
	}
}

// testClientCert produces over TLS with the client certificate, and fails without it.
func testClientCert(t *testing.T, k *Kafka) {
	cfg := k.TLSConfig(t)
	cert, err := tls.LoadX509KeyPair(k.ClientCertFile(), k.ClientKeyFile())
	require.NoError(t, err)
	cfg.Certificates = []tls.Certificate{cert}
	produce(t, kafkaClient(t, k.TLSAddr(), kgo.DialTLSConfig(cfg)), "secure", "mtls", 1)

	// Without a certificate the handshake fails; the client sees its connection end.
	anon := kafkaClient(t, k.TLSAddr(), kgo.DialTLSConfig(k.TLSConfig(t)))
	require.Error(t, anon.Ping(shortCtx(t)))
}

// testAuthorizer: a user without ACLs is refused, and allowed once an ACL grants it.
func testAuthorizer(t *testing.T, k *Kafka) {
	bob := kafkaClient(t, k.SASLAddr(), kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()))
	err := bob.ProduceSync(shortCtx(t), &kgo.Record{Topic: "secure", Value: []byte("denied")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)

	acl := kadm.NewACLs().Allow("User:bob").Topics("secure").Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := k.Admin(t).CreateACLs(shortCtx(t), acl)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
	// The ACL reaches the authorizer through the metadata log, a moment later.
	var last error
	require.Eventually(t, func() bool {
		last = bob.ProduceSync(shortCtx(t), &kgo.Record{Topic: "secure", Value: []byte("allowed")}).FirstErr()
		return !errors.Is(last, kerr.TopicAuthorizationFailed)
	}, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, last)
}

func kafkaClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(100 * time.Millisecond), kgo.RequestRetries(2)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}
