package strings

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Strings{} })
}

// Invalid UTF-8 cannot be written in a golden file's line protocol, so valid_utf8 and the
// refusal of base64decode to produce it are checked on metrics built in code.
func TestInvalidUTF8(t *testing.T) {
	s := &Strings{
		ValidUTF8:    []Op{{Field: "a", Replacement: "?"}, {Tag: "t"}},
		Base64Decode: []Op{{Field: "b"}},
	}
	require.NoError(t, s.Init())
	m := morse.NewMetric("m", []morse.Tag{{Key: "t", Value: "x\xffy"}},
		[]morse.Field{{Key: "a", Value: morse.String("ok\xff\xfeend")}, {Key: "b", Value: morse.String("/w==")}}, time.Unix(1, 0))
	out := s.Apply([]morse.Metric{m})[0]
	a, _ := out.Field("a")
	require.Equal(t, "ok?end", a.Str(), "one replacement per run of bad bytes")
	tv, _ := out.Tag("t")
	require.Equal(t, "xy", tv)
	b, _ := out.Field("b")
	require.Equal(t, "/w==", b.Str(), "base64 of bytes that are not UTF-8 stays encoded")
}

func TestValidate(t *testing.T) {
	require.ErrorContains(t, (&Strings{Trim: []Op{{Cutset: "x"}}}).Validate(), "trim[0]: names nothing to work on")
	require.ErrorContains(t, (&Strings{Left: []Op{{Field: "a", Width: -1}}}).Validate(), "left[0].width: must not be negative")
	require.NoError(t, (&Strings{Left: []Op{{Field: "a", Width: 2}}}).Validate())
}

func BenchmarkStrings(b *testing.B) {
	s := &Strings{
		Lowercase:  []Op{{Tag: "uri_stem"}},
		TrimPrefix: []Op{{Tag: "uri_stem", Prefix: "/api/"}},
		Uppercase:  []Op{{Field: "cs-host", Dest: "cs-host_normalised"}},
	}
	require.NoError(b, s.Init())
	ms := testutil.Parse(b, `iis_log,method=get,uri_stem=/API/HealthCheck cs-host="MIXEDCASE_host",http_version=1.1 1519652321000000000`+"\n", false)
	testutil.BenchProcessor(b, s, ms)
}
