package influxdblistener

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

// diskAcc is an accumulator whose outputs hold metrics in memory for a full disk, or not.
type diskAcc struct {
	morse.Accumulator
	held bool
}

func (a *diskAcc) WaitForDisk(ctx context.Context) error {
	if !a.held {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestKeptAfterTheBudgetWasSpent: a write whose waits for room used up backpressure_max_wait
// and then got room has every metric kept when no disk holds them in memory: its answer is a
// 204, not a 503. With a disk that still holds them, it is refused.
func TestKeptAfterTheBudgetWasSpent(t *testing.T) {
	acc := &diskAcc{Accumulator: &testutil.Accumulator{}}
	g := &gate{acc: acc, budget: time.Second, waited: time.Second}
	require.NoError(t, g.kept())

	acc.held = true
	g = &gate{acc: acc, budget: time.Second, waited: time.Second}
	require.ErrorIs(t, g.kept(), errBusy)
}

// roomDiskAcc has room for every metric but holds them in memory for a full disk.
type roomDiskAcc struct{ diskAcc }

func (a *roomDiskAcc) WaitForRoom(context.Context) error { return nil }

// TestRefusedOnAFullDiskAsksForTheWholeWrite: a write refused because an output's disk buffer
// holds its metrics in memory only does not call its lines accepted, since a sender that
// resends only the rest would lose them on a crash; it asks for the whole write again.
func TestRefusedOnAFullDiskAsksForTheWholeWrite(t *testing.T) {
	acc := &roomDiskAcc{diskAcc{Accumulator: &testutil.Accumulator{}, held: true}}
	h := handlerOnly(t, acc, func(l *InfluxDBListener) { l.BackpressureMaxWait = morse.Duration(20 * time.Millisecond) })
	_, rec, done := serveCounted(h, "/write?db=x", linesBody(10))
	<-done
	require.Equal(t, 503, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	msg := rec.Header().Get("X-Influxdb-Error")
	require.Equal(t, "an output's disk buffer cannot write to its disk and holds metrics in memory only; "+
		"10 lines were parsed but are not safely kept within backpressure_max_wait (20ms): send the whole write again after 1 s", msg)
	require.NotContains(t, rec.Body.String(), "accepted")
}
