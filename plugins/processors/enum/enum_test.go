package enum

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Enum{} })
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		m       Mapping
		wantErr string
	}{
		{"nothing to map", Mapping{ValueMappings: map[string]any{"a": 1}}, "mapping[0]: maps nothing"},
		{"table value", Mapping{Fields: []string{"a"}, ValueMappings: map[string]any{"a": []any{1}}}, "mapping[0].value_mappings.a: must be a string, number or boolean"},
		{"datetime default", Mapping{Fields: []string{"a"}, Default: time.Now()}, "mapping[0].default: must be"},
		{"bad glob", Mapping{Tags: []string{"["}}, "mapping[0].tags: invalid pattern"},
		{"valid", Mapping{Tag: "a", ValueMappings: map[string]any{"x": "y"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Enum{Mappings: []Mapping{tt.m}}).Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func BenchmarkEnum(b *testing.B) {
	e := &Enum{Mappings: []Mapping{{Fields: []string{"status"}, Dest: "status_code",
		ValueMappings: map[string]any{"green": int64(1), "amber": int64(2), "red": int64(3)}}}}
	require.NoError(b, e.Init())
	ms := testutil.Parse(b, "xyzzy,host=a status=\"green\",v=1i 1502489900000000000\n", false)
	testutil.BenchProcessor(b, e, ms)
}
