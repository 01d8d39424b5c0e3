package rename

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Rename{} })
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		replace Replace
		wantErr string
	}{
		{"tag", Replace{Tag: "a", Dest: "b"}, ""},
		{"no dest", Replace{Tag: "a"}, "replace[0].dest: is required"},
		{"nothing to rename", Replace{Dest: "b"}, "replace[0]: needs exactly one of measurement, tag and field, got 0"},
		{"two things", Replace{Tag: "a", Field: "a", Dest: "b"}, "got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Rename{Replaces: []Replace{tt.replace}}).Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestRegistered(t *testing.T) {
	info, ok := morse.DefaultRegistry().Processor("rename")
	require.True(t, ok)
	require.Contains(t, info.SampleConfig, "[[processors.rename]]")
	require.IsType(t, &Rename{}, info.New())
}

func BenchmarkRename(b *testing.B) {
	r := &Rename{Replaces: []Replace{
		{Measurement: "net", Dest: "network"},
		{Tag: "hostname", Dest: "host"},
		{Field: "lower", Dest: "min"},
	}}
	ms := testutil.Parse(b, "net,hostname=a,interface=eth0 lower=1,upper=2,mean=1.5 1000000000\n", false)
	testutil.BenchProcessor(b, r, ms)
}
