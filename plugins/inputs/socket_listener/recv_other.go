//go:build !linux

package socketlistener

import "net"

// batchSys is empty where there is no recvmmsg: a read fills one datagram, and names its
// sender as it reads.
type batchSys struct{}

func (*batchSys) init(*batch) {}

func (*batchSys) addr(int) net.Addr { return nil }

// batchReader returns how c reads a batch: one datagram per call.
func batchReader(c net.PacketConn) func(b *batch) (int, error) { return readOne(c) }

// maxReadBuffer is 0 where the kernel's limit is not known: the system's default stays.
func maxReadBuffer() int { return 0 }

// readBufferOf is 0 where the socket's receive buffer is not read.
func readBufferOf(net.PacketConn) int { return 0 }

// drainAndParse serves a socket on one CPU. Without a way to read the socket without
// waiting, it reads a batch and parses it, in turn, until c is closed.
func (srv *packetServer) drainAndParse(c net.PacketConn) {
	read := batchReader(c)
	d := srv.newDatagramParser()
	b := <-srv.free
	for {
		n, err := read(b)
		if err != nil {
			if !srv.readFailed(err) {
				return
			}
			continue
		}
		b.n = n
		d.parseBatch(b)
	}
}
