package socketlistener

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/sockaddr"
	"github.com/morse-agent/morse/plugins/parsers"
)

const (
	// maxDatagram holds the largest UDP payload (65,507 bytes over IPv4, 65,527 over IPv6).
	maxDatagram = 64 << 10
	// batchSize is how many datagrams one recvmmsg call may return. Each needs a buffer of
	// maxDatagram, so a batch holds batchSize*64 KiB of address space; small datagrams touch
	// only the first page of each. A flood fills every call, and 32 a call let one core
	// carry about a fifth more lines than 8 did, as each call's fixed cost is spread wider.
	batchSize = 32
	// batchesPerWorker is how many batches may wait for or be in parsing per worker, on top
	// of the socket's receive buffer.
	batchesPerWorker = 2
)

// packetServer serves a UDP port with one or more sockets, or a unix datagram socket.
//
// Reading and parsing are apart: each socket has a reader goroutine that fills batches of
// datagrams, and a pool of workers parses them. SO_REUSEPORT spreads senders over the
// sockets by a hash of their address, so a flood from a single sender reaches one socket
// only; the pool still parses it on every CPU. Batches are recycled through a free list,
// so the server allocates its buffers once. When every batch is busy, the readers wait
// and the socket's receive buffer (read_buffer_size) absorbs the burst.
type packetServer struct {
	sl      *SocketListener
	acc     morse.Accumulator
	conns   []net.PacketConn
	path    string // a unixgram socket file to remove on close
	closing atomic.Bool
	done    chan struct{}   // closed by close, to end a reader's wait
	ctx     context.Context // ends on close, to end a wait for the outputs' room
	cancel  context.CancelFunc
	free    chan *batch // batches ready to be filled
	work    chan *batch // filled batches, for the workers
	readers sync.WaitGroup
	workers sync.WaitGroup
}

// batch is a set of datagram buffers, how many of them the last read filled, and what the
// platform needs to read them and to name their senders.
type batch struct {
	bufs  [][]byte   // maxDatagram bytes each
	sizes []int      // the bytes read into each, or truncated
	from  []net.Addr // the senders, for a reader that names them as it reads
	n     int
	sys   batchSys
}

// truncated is the size of a datagram that did not fit its buffer. Only a unix datagram
// can be larger than a UDP payload's 64 KiB.
const truncated = -1

func newBatch() *batch {
	b := &batch{bufs: make([][]byte, batchSize), sizes: make([]int, batchSize), from: make([]net.Addr, batchSize)}
	for i := range b.bufs {
		b.bufs[i] = make([]byte, maxDatagram)
	}
	b.sys.init(b)
	return b
}

// sender names who sent datagram i of a batch in a log line. Working out an address costs
// allocations, so it is done only for a line that is written, which happens while the
// batch still holds the datagram.
type sender struct {
	b *batch
	i int
}

// addr is the sender's address, nil for an unnamed socket.
func (s sender) addr() net.Addr {
	if a := s.b.from[s.i]; a != nil {
		return a
	}
	return s.b.sys.addr(s.i)
}

// LogValue implements slog.LogValuer.
func (s sender) LogValue() slog.Value {
	a := s.addr()
	if a == nil {
		return slog.StringValue("unnamed socket")
	}
	return slog.StringValue(a.String())
}

// listenPacket binds the datagram sockets and starts the readers and the workers.
func (s *SocketListener) listenPacket(acc morse.Accumulator) (*packetServer, error) {
	srv := &packetServer{sl: s, acc: acc, done: make(chan struct{})}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	if err := srv.bind(); err != nil {
		for _, c := range srv.conns {
			_ = c.Close()
		}
		srv.removeSocket()
		return nil, err
	}
	workers := s.receivers()
	// With one socket, one worker and one CPU, the reader parses what it reads itself: a
	// hand-off to a worker would overlap nothing, and cost two goroutine switches a read.
	inline := workers == 1 && len(srv.conns) == 1 && singleCPU()
	batches := workers * batchesPerWorker
	if inline {
		batches = 1
	}
	srv.free = make(chan *batch, batches)
	srv.work = make(chan *batch, batches)
	for range batches {
		srv.free <- newBatch()
	}
	s.sizeReadBuffers(srv.conns)
	if inline {
		srv.readers.Go(func() { srv.drainAndParse(srv.conns[0]) })
		return srv, nil
	}
	for range workers {
		srv.workers.Go(srv.parseBatches)
	}
	for _, c := range srv.conns {
		srv.readers.Go(func() { srv.receive(c) })
	}
	return srv, nil
}

// bind opens the sockets. Several UDP receivers share one port through SO_REUSEPORT; the
// first binds the given address and the others bind the address it got, so that port 0
// works too.
func (srv *packetServer) bind() error {
	s := srv.sl
	if s.addr.Network == "unixgram" {
		if err := sockaddr.RemoveStale("unixgram", s.addr.Addr); err != nil {
			return err
		}
		c, err := net.ListenPacket("unixgram", s.addr.Addr)
		if err != nil {
			return err
		}
		srv.conns, srv.path = append(srv.conns, c), s.addr.Addr
		return s.chmod()
	}
	n := s.receivers()
	var lc net.ListenConfig
	if n > 1 {
		lc.Control = reusePort
	}
	addr := s.addr.Addr
	for range n {
		c, err := lc.ListenPacket(context.Background(), s.addr.Network, addr)
		if err != nil {
			return err
		}
		srv.conns = append(srv.conns, c)
		addr = c.LocalAddr().String()
	}
	return nil
}

func (srv *packetServer) addr() net.Addr { return srv.conns[0].LocalAddr() }

// close closes every socket, which ends the readers, then lets the workers parse what was
// read and waits for them.
func (srv *packetServer) close() {
	srv.closing.Store(true)
	close(srv.done)
	srv.cancel()
	for _, c := range srv.conns {
		_ = c.Close()
	}
	srv.readers.Wait()
	close(srv.work)
	srv.workers.Wait()
	srv.removeSocket()
}

// removeSocket removes the unixgram socket file, which closing the socket leaves behind.
func (srv *packetServer) removeSocket() {
	if srv.path != "" {
		_ = os.Remove(srv.path)
	}
}

// singleCPU reports whether the agent may run on one CPU only (runtime.NumCPU follows the
// process's CPU affinity); tests replace it.
var singleCPU = func() bool { return runtime.NumCPU() == 1 }

// readOne reads one datagram a call, and names its sender.
func readOne(c net.PacketConn) func(b *batch) (int, error) {
	return func(b *batch) (int, error) {
		n, from, err := c.ReadFrom(b.bufs[0])
		b.sizes[0], b.from[0] = n, from
		return 1, err
	}
}

// receive fills batches from one socket for the workers until it is closed.
func (srv *packetServer) receive(c net.PacketConn) {
	read := batchReader(c)
	for {
		var b *batch
		select {
		case b = <-srv.free:
		case <-srv.done:
			return
		}
		n, err := read(b)
		if err != nil {
			srv.free <- b // there is room: every batch is in free, in work or here
			if !srv.readFailed(err) {
				return
			}
			continue
		}
		b.n = n
		srv.work <- b // there is room, as above
	}
}

// parseBatches parses filled batches until the server closes, and recycles them.
func (srv *packetServer) parseBatches() {
	d := srv.newDatagramParser()
	for b := range srv.work {
		// While a healthy output holds a backlog, wait rather than make it evict: the
		// readers fill the other batches meanwhile, then the kernel's receive buffer.
		_ = morse.WaitForRoom(srv.ctx, srv.acc)
		d.parseBatch(b)
		srv.free <- b
	}
}

func (srv *packetServer) newDatagramParser() *datagramParser {
	d := &datagramParser{sl: srv.sl, out: morse.NewMetricBatch(srv.acc, metricBatchSize)}
	d.emit = d.out.Add
	return d
}

// metricBatchSize is how many metrics a datagram parser hands to the accumulator at once.
const metricBatchSize = 256

// parseBatch parses every datagram of a filled batch, and hands their metrics over. A
// datagram cut short is dropped whole and counted as a read error: its last line could
// be cut to a different value ("v=1234" to "v=12") rather than to an error.
func (d *datagramParser) parseBatch(b *batch) {
	for i, size := range b.sizes[:b.n] {
		if size == truncated {
			d.sl.c.readErr.Incr()
			d.sl.ioLog.Log(d.sl.log, slog.LevelWarn, "dropped a datagram larger than the read buffer",
				"from", sender{b, i}, "limit_bytes", len(b.bufs[i]))
			continue
		}
		if len(d.sl.allowed) > 0 && !d.sl.sourceAllowed(sender{b, i}.addr()) {
			d.sl.c.refused.Incr()
			d.sl.ioLog.Log(d.sl.log, slog.LevelWarn, "datagram dropped", "from", sender{b, i}, "error", errNotAllowed)
			continue
		}
		handleDatagram(d, b.bufs[i][:size], sender{b, i})
	}
	d.out.Flush()
}

// readFailed handles a read error. It reports false when the socket was closed, and
// otherwise counts and logs the error and pauses briefly, so that an error that repeats does
// not spin a CPU.
func (srv *packetServer) readFailed(err error) bool {
	if srv.closing.Load() || errors.Is(err, net.ErrClosed) {
		return false
	}
	s := srv.sl
	s.c.readErr.Incr()
	s.ioLog.Log(s.log, slog.LevelWarn, "reading datagrams failed", "error", err)
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-srv.done:
		return false
	}
}

// datagramParser parses the datagrams of one receiver. Its buffers are reused from one
// datagram to the next, so a datagram costs no allocation beyond the parser's own.
type datagramParser struct {
	sl    *SocketListener
	out   *morse.MetricBatch
	emit  func(morse.Metric)
	br    bytes.Reader
	gz    *gzip.Reader
	plain bytes.Buffer   // a decompressed datagram
	other parsers.Parser // the parser of a data_format other than influx, built when first needed
}

// handleDatagram parses one datagram on its own: a line never continues in the next
// datagram. from names the sender in a log line; it is generic so that naming it costs
// nothing unless a line is logged.
func handleDatagram[S slog.LogValuer](d *datagramParser, b []byte, from S) {
	c := &d.sl.c
	c.packets.Incr()
	c.bytes.Add(int64(len(b)))
	if d.sl.ContentEncoding == "gzip" {
		var err error
		if b, err = d.gunzip(b); err != nil {
			c.decodeErr.Incr()
			d.sl.ioLog.Log(d.sl.log, slog.LevelWarn, "cannot decompress datagram", "from", from, "error", err)
			return
		}
	}
	if d.sl.other {
		c.lines.Add(int64(d.parseDatagram(b, from)))
		return
	}
	res := d.sl.parser.Parse(b, d.emit)
	if res.Errors > 0 {
		// lineError counts the first bad line and logs it; the others are only counted.
		c.parseErr.Add(int64(res.Errors - 1))
		d.sl.lineError(*res.First, from)
	}
	// Lines last, so that whoever sees them counted sees their errors counted too.
	c.lines.Add(int64(res.Lines))
}

// gunzip decompresses a datagram into d.plain, refusing one that grows beyond
// max_decompression_size: a few kilobytes of gzip can hold gigabytes of zeros.
func (d *datagramParser) gunzip(b []byte) ([]byte, error) {
	d.br.Reset(b)
	var err error
	if d.gz == nil {
		d.gz, err = gzip.NewReader(&d.br)
	} else {
		err = d.gz.Reset(&d.br)
	}
	if err != nil {
		return nil, err
	}
	limit := int64(d.sl.MaxDecompressionSize)
	d.plain.Reset()
	if _, err := d.plain.ReadFrom(io.LimitReader(d.gz, limit+1)); err != nil {
		return nil, err
	}
	if int64(d.plain.Len()) > limit {
		return nil, fmt.Errorf("larger than max_decompression_size (%d bytes) after decompression", limit)
	}
	return d.plain.Bytes(), nil
}
