package regex

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
	"github.com/morse-agent/morse/internal/testutil"
)

func TestGolden(t *testing.T) {
	testutil.RunProcessors(t, "testdata", func(*testutil.Clock) morse.Processor { return &Regex{} })
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		r       Regex
		wantErr string
	}{
		{"tags without key", Regex{Tags: []Rule{{Pattern: "a"}}}, "tags[0].key: is required"},
		{"bad pattern", Regex{Fields: []Rule{{Key: "a", Pattern: "("}}}, "fields[0].pattern: error parsing regexp"},
		{"bad result_key", Regex{TagRename: []Rule{{Pattern: "a", ResultKey: "replace"}}}, `tag_rename[0].result_key: must be "keep" or "overwrite"`},
		{"key in a rename", Regex{FieldRename: []Rule{{Key: "a", Pattern: "a"}}}, "field_rename[0].key: has no effect"},
		{"result_key in metric_rename", Regex{MetricRename: []Rule{{Pattern: "a", ResultKey: "keep"}}}, "metric_rename[0]: key and result_key have no effect"},
		{"append on fields", Regex{Fields: []Rule{{Key: "a", Pattern: "a", Append: true}}}, "fields[0].append: applies to tags only"},
		{"valid", Regex{Tags: []Rule{{Key: "a*", Pattern: "a", Replacement: "b"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func BenchmarkRegex(b *testing.B) {
	r := &Regex{
		Tags:        []Rule{{Key: "resp_code", Pattern: `^(\d)\d\d$`, Replacement: "${1}xx"}},
		FieldRename: []Rule{{Pattern: `^client_(\w+)$`, Replacement: "${1}"}},
	}
	require.NoError(b, r.Init())
	ms := testutil.Parse(b, `nginx_requests,verb=GET,resp_code=200 request="/api/search/",client_ip="127.0.0.1",resp_bytes=270i 1519652321000000000`+"\n", false)
	testutil.BenchProcessor(b, r, ms)
}
