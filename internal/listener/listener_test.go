package listener_test

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/listener"
	"github.com/morse-agent/morse/internal/listener/listenertest"
	"github.com/morse-agent/morse/selfstat"
)

func TestLimitRefusesOverTheCapAndFreesSlotsOnClose(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var opened, closed, refused selfstat.Counter
	refusedFrom := make(chan net.Addr, 1)
	ln := listener.Limit(raw, 2, listener.ConnCounters{Opened: &opened, Closed: &closed, Refused: &refused},
		func(a net.Addr) { refusedFrom <- a })
	defer ln.Close()

	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	dial()
	dial()
	a, b := <-accepted, <-accepted
	over := dial()
	require.NoError(t, over.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = over.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the third connection is closed by the listener")
	require.Equal(t, over.LocalAddr().String(), (<-refusedFrom).String())
	require.Equal(t, int64(1), refused.Get())

	require.NoError(t, a.Close())
	_ = a.Close() // closing twice frees one slot only, as the counts below show
	dial()
	c := <-accepted
	require.Equal(t, int64(3), opened.Get())
	require.Equal(t, int64(1), closed.Get())
	require.NoError(t, b.Close())
	require.NoError(t, c.Close())
	require.NoError(t, ln.Close())
	_, open := <-accepted
	require.False(t, open, "Accept ends when the listener closes")
	require.Equal(t, int64(3), closed.Get())
}

func TestConnSetClosesAndWaits(t *testing.T) {
	var set listener.ConnSet
	started := make(chan struct{}, 3)
	for range 3 {
		server, client := net.Pipe()
		t.Cleanup(func() { _ = client.Close() })
		require.True(t, set.Go(server, func(c net.Conn) {
			started <- struct{}{}
			_, _ = io.Copy(io.Discard, c) // returns when CloseAndWait closes c
		}))
	}
	for range 3 {
		<-started
	}
	require.Equal(t, 3, set.Len())
	set.CloseAndWait()
	require.Equal(t, 0, set.Len())
	server, client := net.Pipe()
	defer client.Close()
	require.False(t, set.Go(server, func(net.Conn) { t.Error("must not run after CloseAndWait") }))
}

func TestServerTLS(t *testing.T) {
	require.NoError(t, (&listener.ServerTLS{}).ValidateTLS())
	cfg, err := (&listener.ServerTLS{}).TLSConfig()
	require.NoError(t, err)
	require.Nil(t, cfg, "TLS is off without a certificate")

	certs := listenertest.NewCerts(t)
	o := listener.ServerTLS{Cert: certs.ServerCert, Key: certs.ServerKey}
	cfg, err = o.TLSConfig()
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)

	o.AllowedCACerts, o.MinVersion = []string{certs.CA}, "TLS13"
	cfg, err = o.TLSConfig()
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)

	for _, bad := range []listener.ServerTLS{
		{Cert: certs.ServerCert},
		{Cert: certs.ServerCert, Key: certs.ServerKey, MinVersion: "TLS11"},
		{Cert: certs.ServerCert, Key: certs.ServerKey, MinVersion: "SSL3"},
		{AllowedCACerts: []string{certs.CA}},
	} {
		require.Error(t, bad.ValidateTLS(), "%+v", bad)
	}
	_, err = (&listener.ServerTLS{Cert: certs.ServerCert, Key: certs.CA}).TLSConfig()
	require.ErrorContains(t, err, "tls_cert: ")
	_, err = (&listener.ServerTLS{Cert: certs.ServerCert, Key: certs.ServerKey, AllowedCACerts: []string{certs.ServerKey}}).TLSConfig()
	require.ErrorContains(t, err, "tls_allowed_cacerts: ")
}
