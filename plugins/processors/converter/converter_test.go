package converter

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Converter{} })
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		conv    Converter
		wantErr string
	}{
		{"empty tables do nothing but are valid", Converter{Tags: &Conversion{}}, ""},
		{"no table", Converter{}, "tags: neither tags nor fields are set"},
		{"timestamp without format", Converter{Fields: &Conversion{Timestamp: []string{"t"}}}, "fields.timestamp_format: is required with timestamp"},
		{"tag to tag", Converter{Tags: &Conversion{Tag: []string{"a"}}}, "tags.tag: a tag is a tag already"},
		{"base64 of a tag", Converter{Tags: &Conversion{Base64IEEEFloat32: []string{"a"}}}, "tags.base64_ieee_float32: applies to fields only"},
		{"bad glob", Converter{Fields: &Conversion{Integer: []string{"a["}}}, "fields.integer: invalid pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.conv.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			var fe *morse.FieldError
			require.ErrorAs(t, err, &fe, "names the key at fault")
		})
	}
}

// A field that fails to convert in every metric must not log once per metric.
func TestFailuresAreLoggedThrottled(t *testing.T) {
	var logs bytes.Buffer
	p := &Converter{Fields: &Conversion{Integer: []string{"v"}}}
	require.NoError(t, p.Validate())
	p.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, p.Init())
	ms := testutil.Parse(t, strings.Repeat("m v=\"bad\",w=1 1\n", 1000), false)
	out := p.Apply(ms)
	require.Len(t, out, 1000)
	for _, m := range out {
		_, has := m.Field("v")
		require.False(t, has, "the field that failed is dropped")
	}
	require.Equal(t, 1, strings.Count(logs.String(), "\n"), "one log line for 1000 failures: %s", logs.String())
	require.Contains(t, logs.String(), `field=v value="\"bad\"" to=integer`)
}

func BenchmarkConverter(b *testing.B) {
	p := &Converter{
		Tags:   &Conversion{Integer: []string{"port"}},
		Fields: &Conversion{Integer: []string{"scboard_*"}, Tag: []string{"state"}},
	}
	require.NoError(b, p.Validate())
	require.NoError(b, p.Init())
	ms := testutil.Parse(b, "apache,port=80,server=a scboard_open=100,scboard_idle=3.5,state=\"ok\",busy=1 1000000000\n", false)
	testutil.BenchProcessor(b, p, ms)
}
