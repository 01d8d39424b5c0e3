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
// instead, and counts every eviction. A listener that cannot push back on its senders (UDP)
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
