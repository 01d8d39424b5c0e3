package mqtt_consumer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testserver"
	"github.com/morse-agent/morse/internal/testutil"
	"github.com/morse-agent/morse/plugins/common/mqtt"
)

// TLS with the test CA reads messages; without the CA the error says the certificate was
// not trusted. The password listener takes the right password and refuses a wrong one with
// an error that says so, over both protocols.
func TestTLSAndAuth(t *testing.T) {
	b := testserver.SharedMosquitto(t)
	for _, proto := range []string{"3.1.1", "5"} {
		t.Run("v"+proto, func(t *testing.T) {
			prefix := unique(t)
			tlsOK, _ := consumerFor(t, b.TLSAddr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) {
				m.Servers = []string{"ssl://" + b.TLSAddr}
				m.CA = b.Certs.CA
			})
			acc := &testutil.Accumulator{}
			start(t, tlsOK, acc)
			publish(t, publisher(t, b.Addr, proto, false), prefix+"/t", 0, "tls ok=1i 1700000000000000000")
			wait(t, acc, 1)

			untrusted, _ := consumerFor(t, b.TLSAddr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) {
				m.Servers = []string{"ssl://" + b.TLSAddr}
				m.ConnectionTimeout = morse.Duration(2e9)
				m.Enable = new(bool)
				*m.Enable = true
			})
			err := untrusted.Start(testutil.Context(t), &testutil.Accumulator{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "certificate")

			good, _ := consumerFor(t, b.AuthAddr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) {
				m.Username, m.Password = testserver.MosquittoUser, testserver.MosquittoPassword
			})
			start(t, good, &testutil.Accumulator{})

			wrong, _ := consumerFor(t, b.AuthAddr, proto, []string{prefix + "/#"}, func(m *MQTTConsumer) {
				m.Username, m.Password = testserver.MosquittoUser, "wrong"
				m.ConnectionTimeout = morse.Duration(2e9)
			})
			err = wrong.Start(testutil.Context(t), &testutil.Accumulator{})
			require.Error(t, err)
			assert.True(t, errors.Is(err, mqtt.ErrNotAuthorized), "%v", err)
			assert.Contains(t, err.Error(), "not authorized")
			t.Log(err)
		})
	}
}
