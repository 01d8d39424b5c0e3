package interrupts

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func gather(t *testing.T, fixture string, cpuAsTag bool) *testutil.Accumulator {
	t.Helper()
	t.Setenv("HOST_PROC", filepath.Join("testdata", fixture))
	acc := &testutil.Accumulator{}
	require.NoError(t, (&Interrupts{CPUAsTag: cpuAsTag}).Gather(context.Background(), acc))
	return acc
}

// find returns the metrics of measurement with tag irq=id, as canonical strings without
// the time.
func find(acc *testutil.Accumulator, measurement, id string) []string {
	var out []string
	for _, m := range acc.MetricsNamed(measurement) {
		if v, _ := m.Tag("irq"); v == id {
			s := testutil.Canon([]morse.Metric{m})[0]
			out = append(out, s[:strings.LastIndexByte(s, ' ')])
		}
	}
	return out
}

func TestTelegrafsInputs(t *testing.T) {
	acc := gather(t, "raspberrypi", false)
	require.Empty(t, acc.Errors())
	require.Len(t, acc.MetricsNamed("interrupts"), 22, "every line but FIQ, which has no counts")
	require.Equal(t, []string{"interrupts,device=64 Edge dwc_otg, dwc_otg_pcd, dwc_otg_hcd:usb1,irq=62,type=ARMCTRL-level " +
		"CPU0=integer:521451447,CPU1=integer:0,CPU2=integer:0,CPU3=integer:0,total=integer:521451447"}, find(acc, "interrupts", "62"))
	require.Equal(t, []string{"interrupts,irq=IPI2,type=Rescheduling interrupts CPU0=integer:23564958,CPU1=integer:23464876," +
		"CPU2=integer:23531165,CPU3=integer:23040826,total=integer:93601825"}, find(acc, "interrupts", "IPI2"))
	require.Empty(t, find(acc, "interrupts", "FIQ"))
	require.Equal(t, []string{"soft_interrupts,irq=MIS CPU0=integer:0,total=integer:0"}, find(acc, "soft_interrupts", "MIS"),
		"a line with fewer counts than CPUs")
	require.Equal(t, []string{"soft_interrupts,irq=NMI,type=Non-maskable interrupts CPU0=integer:0,CPU1=integer:0,total=integer:0"},
		find(acc, "soft_interrupts", "NMI"))

	acc = gather(t, "raspberrypi", true)
	require.Equal(t, []string{
		"soft_interrupts,cpu=cpu0,device=timer,irq=0,type=IO-APIC-edge count=integer:134",
		"soft_interrupts,cpu=cpu1,device=timer,irq=0,type=IO-APIC-edge count=integer:0",
	}, find(acc, "soft_interrupts", "0"))
	require.Len(t, acc.MetricsNamed("interrupts"), 22*4)
}

func TestThisMachinesCapture(t *testing.T) {
	acc := gather(t, "host", false)
	require.Empty(t, acc.Errors())
	require.Len(t, acc.MetricsNamed("interrupts"), 35)
	require.Len(t, acc.MetricsNamed("soft_interrupts"), 10)
	require.Equal(t, []string{"interrupts,device=3-edge virtio3-event,irq=43,type=PCI-MSIX-0000:00:04.0 " +
		"CPU0=integer:1,CPU1=integer:0,total=integer:1"}, find(acc, "interrupts", "43"))
	require.Equal(t, []string{"interrupts,irq=ERR CPU0=integer:0,total=integer:0"}, find(acc, "interrupts", "ERR"))
	require.Equal(t, []string{"soft_interrupts,irq=NET_RX CPU0=integer:18058692,CPU1=integer:33196821,total=integer:51255513"},
		find(acc, "soft_interrupts", "NET_RX"))
}

func TestOneBadFileKeepsTheOther(t *testing.T) {
	acc := gather(t, "broken", false)
	require.Len(t, acc.Errors(), 1)
	require.ErrorContains(t, acc.Errors()[0], "expected the first line to start with CPU0")
	require.Empty(t, acc.MetricsNamed("interrupts"))
	require.Len(t, acc.MetricsNamed("soft_interrupts"), 10)

	acc = gather(t, "missing", false)
	require.Len(t, acc.Errors(), 2)
}

func TestGoldenShape(t *testing.T) {
	t.Setenv("HOST_PROC", "")
	shapes := testutil.LoadGolden(t, filepath.Join("testdata", "interrupts.golden"))
	ms := testutil.GatherReal(t, &Interrupts{}, shapes.Config, 1)
	require.NotEmpty(t, ms)
	require.Empty(t, shapes.Check(ms))
}
