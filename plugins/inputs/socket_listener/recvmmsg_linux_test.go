package socketlistener

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
)

// TestUDPReadsAreBatched: eight datagrams waiting on a UDP socket come back from one read,
// which is one recvmmsg call on Linux.
func TestUDPReadsAreBatched(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	require.NoError(t, err)
	defer conn.Close()
	for i := range batchSize {
		_, err := conn.Write([]byte(fmt.Sprintf("m v=%d\n", i)))
		require.NoError(t, err)
	}
	b := &batch{msgs: make([]ipv4.Message, batchSize)}
	for i := range b.msgs {
		b.msgs[i].Buffers = [][]byte{make([]byte, maxDatagram)}
	}
	require.NoError(t, pc.SetReadDeadline(time.Now().Add(waitFor)))
	n, err := batchReader(pc)(b)
	require.NoError(t, err)
	require.Equal(t, batchSize, n, "one read returns every datagram waiting")
	for i := range n {
		require.Equal(t, fmt.Sprintf("m v=%d\n", i), string(b.msgs[i].Buffers[0][:b.msgs[i].N]))
	}
}
