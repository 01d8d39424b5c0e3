package kafka_consumer

import "github.com/twmb/franz-go/pkg/kgo"

// partition tracks the messages of one assigned partition that are in flight, in the order
// they were read, so that its offset is committed only up to the first one not done. A
// revoked partition is dropped from the consumer; messages of it that are done later are
// ignored, so that the member that took it over is the only one to commit it.
type partition struct {
	topic    string
	id       int32
	base     uint64  // the sequence number of inflight[0]
	inflight []entry // oldest first
	commit   kgo.EpochOffset
	dirty    bool // commit moved since the last commit request
	revoked  bool
}

type entry struct {
	offset int64
	epoch  int32
	done   bool
}

// ref is where a message in flight is tracked.
type ref struct {
	p   *partition
	seq uint64
}

// add tracks a message read from the partition and returns its place.
func (p *partition) add(r *kgo.Record) ref {
	seq := p.base + uint64(len(p.inflight))
	p.inflight = append(p.inflight, entry{offset: r.Offset, epoch: r.LeaderEpoch})
	return ref{p: p, seq: seq}
}

// done marks the message at seq done and moves the offset to commit past every message
// done from the oldest on. It reports whether the offset moved.
func (p *partition) done(seq uint64) bool {
	if p.revoked || seq < p.base {
		return false
	}
	p.inflight[seq-p.base].done = true
	moved := false
	for len(p.inflight) > 0 && p.inflight[0].done {
		e := p.inflight[0]
		// A committed offset is the next one to read.
		p.commit = kgo.EpochOffset{Epoch: e.epoch, Offset: e.offset + 1}
		p.inflight[0] = entry{}
		p.inflight = p.inflight[1:]
		p.base++
		moved = true
	}
	if len(p.inflight) == 0 {
		p.inflight = p.inflight[:0:0] // let the emptied backing array go
	}
	p.dirty = p.dirty || moved
	return moved
}
