package batch

import (
	"time"
)

// scheduler decides when the flush loop writes: every interval ± jitter, and at once when a
// full batch is waiting. It knows nothing of buffers or outputs; the writer tells it the
// buffer's size after each add.
type scheduler struct {
	interval, jitter time.Duration
	batchSize        int
	rand             func(n int64) int64 // uniform in [0, n); replaced in tests
	ready            chan struct{}       // a full batch is waiting; capacity 1
	timer            *time.Timer
}

func newScheduler(interval, jitter time.Duration, batchSize int, rand func(int64) int64) *scheduler {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &scheduler{interval: interval, jitter: jitter, batchSize: batchSize, rand: rand,
		ready: make(chan struct{}, 1), timer: t}
}

// added is told the buffer's size after an add; a full batch wakes the flush loop. It never
// blocks.
func (s *scheduler) added(size int) {
	if size >= s.batchSize {
		s.kick()
	}
}

// kick wakes the flush loop if it waits, to flush at once if a flush is due. It never
// blocks.
func (s *scheduler) kick() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// nextWait draws the wait before the next flush uniformly from
// [interval − jitter, interval + jitter], afresh every time, so that a fleet of agents
// started together does not flush in step.
func (s *scheduler) nextWait() time.Duration {
	if s.jitter <= 0 {
		return s.interval
	}
	return s.interval - s.jitter + time.Duration(s.rand(int64(2*s.jitter)+1))
}

// wait waits for the next flush: the drawn wait, or a kick while a flush is due (a full batch
// is waiting, or sources are held back; the previous flush may have emptied the buffer
// since). It returns false when stop is closed.
func (s *scheduler) wait(stop <-chan struct{}, due func() bool) bool {
	s.timer.Reset(s.nextWait())
	for {
		select {
		case <-stop:
			return false
		case <-s.timer.C:
			return true
		case <-s.ready:
			if due() {
				return true
			}
		}
	}
}

// sleep waits d, during which a full buffer does not cut the wait short, so that a sink that
// is down sees requests at the backoff's pace. It returns false when stop is closed.
func (s *scheduler) sleep(stop <-chan struct{}, d time.Duration) bool {
	s.timer.Reset(d)
	select {
	case <-stop:
		return false
	case <-s.timer.C:
		return true
	}
}

func (s *scheduler) close() { s.timer.Stop() }
