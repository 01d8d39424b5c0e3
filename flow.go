package morse

import "context"

// RoomWaiter is implemented by the agent's accumulators: it is how a listener that can push
// back on its senders learns that it should. A TCP or unix stream listener calls WaitForRoom
// before each small batch of metrics it adds, and reads nothing more while it waits, so the
// kernel's flow control slows the sender down. An HTTP listener does the same within a
// body, and answers 503 with Retry-After if the wait passes its bound.
//
// The wait applies only to outputs that are keeping up: an output whose writes fail, that is
// backing off or that is down never holds a source back. Its buffer evicts the oldest metrics
// instead, and counts every eviction. A disk buffer whose disk refuses writes holds sources
// back whatever its sink (see DiskWaiter). A listener that cannot push back on its senders (UDP)
// may call it with a short deadline, to let datagrams wait in its own queue and the socket's
// receive buffer rather than make a healthy output evict.
type RoomWaiter interface {
	// WaitForRoom returns at once while every healthy output that this input feeds has
	// room. Otherwise it blocks until each such output's buffer has fallen to its low-water
	// mark, the output stops being healthy, or ctx ends; then it returns ctx's error.
	WaitForRoom(ctx context.Context) error
}

// WaitForRoom waits on acc if it is a RoomWaiter and returns at once otherwise, so a plugin
// can call it with whatever accumulator it was given, test accumulators included.
func WaitForRoom(ctx context.Context, acc Accumulator) error {
	if w, ok := acc.(RoomWaiter); ok {
		return w.WaitForRoom(ctx)
	}
	return nil
}

// DiskWaiter is implemented by the agent's accumulators, for a listener that acknowledges
// what it received, such as an HTTP listener: it calls WaitForDisk after it handed a write's
// metrics over and before it answers that the write succeeded. While an output's disk
// buffer holds metrics in memory because its disk refuses writes, a crash would lose them,
// so the listener should not promise they are kept: it waits, and answers that the write
// failed if the wait passes its bound. RoomWaiter's wait covers this case too, but also a
// healthy output's backlog, which is no reason to refuse what was already taken.
type DiskWaiter interface {
	// WaitForDisk returns at once unless an output that this input feeds holds metrics in
	// memory because its disk refused them. Otherwise it blocks until they are on disk,
	// written or dropped, or ctx ends; then it returns ctx's error.
	WaitForDisk(ctx context.Context) error
}

// WaitForDisk waits on acc if it is a DiskWaiter and returns at once otherwise.
func WaitForDisk(ctx context.Context, acc Accumulator) error {
	if w, ok := acc.(DiskWaiter); ok {
		return w.WaitForDisk(ctx)
	}
	return nil
}
