package socketlistener

import (
	"bufio"
	"compress/gzip"
	"io"
)

// gzipMembers reads a stream of gzip members one after the other, as senders write them:
// Telegraf's socket_writer sends each metric as a member of its own, morse's each batch. It
// hands over all of a member before it waits for the header of the next, where a
// multistream gzip.Reader waits for that header before it returns a member's last bytes,
// holding back the sender's last lines until it sends again. One member running on for the
// whole connection, flushed from time to time, reads the same.
type gzipMembers struct {
	br *bufio.Reader // one buffer for every member, so that none loses the next one's bytes
	gz *gzip.Reader
}

// newGzipMembers reads the first member's header.
func newGzipMembers(r io.Reader) (*gzipMembers, error) {
	br := bufio.NewReader(r)
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	gz.Multistream(false)
	return &gzipMembers{br: br, gz: gz}, nil
}

// Read returns what the current member holds; at its end, it starts the next one. The
// stream ends cleanly only between members.
func (m *gzipMembers) Read(p []byte) (int, error) {
	for {
		n, err := m.gz.Read(p)
		if err != io.EOF {
			return n, err
		}
		if n > 0 {
			return n, nil // the next call starts the next member
		}
		if err := m.gz.Reset(m.br); err != nil {
			return 0, err // io.EOF when the connection ends after a whole member
		}
		m.gz.Multistream(false)
	}
}

// Close releases the current member's decompressor.
func (m *gzipMembers) Close() error { return m.gz.Close() }
