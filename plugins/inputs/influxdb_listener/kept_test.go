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
