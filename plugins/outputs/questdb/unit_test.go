package questdb

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/morse-agent/morse"
	"github.com/stretchr/testify/require"
)

// Each row's answer was checked against a real QuestDB 9.1.0 (see TestRealQuestDB and the
// harness's own test); these keep the rules from drifting.
func TestValidName(t *testing.T) {
	tests := []struct {
		kind    nameKind
		name    string
		escaped bool
		ok      bool
	}{
		{tableName, "cpu", false, true},
		{tableName, "a.b", false, true},
		{tableName, "a-b", false, true},
		{tableName, "with space", false, true},
		{tableName, "a..b", false, false},
		{tableName, ".ab", false, false},
		{tableName, "ab.", false, false},
		{tableName, "a/b", false, false},
		{tableName, "a\ufeffb", false, false},
		{tableName, "", false, false},
		{tableName, strings.Repeat("x", 127), false, true},
		{tableName, strings.Repeat("x", 128), false, false},
		{tableName, strings.Repeat("é", 100), false, true},  // 100 characters, 200 bytes
		{tableName, strings.Repeat("é", 101), false, false}, // 202 bytes
		{columnName, strings.Repeat("字", 90), false, false}, // 270 bytes: QuestDB takes, then fails
		{columnName, "Host", false, true},
		{tableName, `a\,b`, true, false},
		{tableName, `a\ b`, true, true},
		{columnName, "usage_idle", false, true},
		{columnName, "usage-idle", false, false},
		{columnName, "x.y", false, false},
		{columnName, "k8s.io/app", false, false},
		{columnName, "tab\there", false, false},
		{columnName, "ünï", false, true},
		{columnName, `a\=b`, true, true},
		{columnName, `a\,b`, true, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.ok, validName(tt.kind, tt.name, tt.escaped, DefaultMaxNameLen), "%d %q", tt.kind, tt.name)
	}
}

func TestCheckLineText(t *testing.T) {
	tests := []struct {
		text   string
		uints  bool
		reason string // empty: taken
	}{
		{`cpu,host=a usage=1.5,n=3i,s="a,b=c",ok=true`, false, ""},
		{`cpu,host=a big=9223372036854775807u`, true, ""},
		{`cpu,host=a big=9223372036854775808u`, true, ReasonUnsupportedValue},
		{`cpu,host=a big=0009223372036854775808u`, true, ReasonUnsupportedValue},
		{`cpu min=-9223372036854775808i`, false, ReasonUnsupportedValue},
		{`cpu min=-9223372036854775807i`, false, ""},
		{`cpu s="ends in 9223372036854775808u",x=1`, true, ""},
		{`cpu,my-tag=a v=1`, false, ReasonInvalidName},
		{`cpu usage-idle=1`, false, ReasonInvalidName},
		{`cpu,v=x v=1`, false, ReasonInvalidName},
		{`cpu,Host=a host=7i`, false, ReasonInvalidName}, // QuestDB's names ignore case
		{`cpu,Host=a,host=b v=1`, false, ReasonInvalidName},
		{`cpu v=1i,V=2i`, false, ReasonInvalidName},
		{`a..b v=1`, false, ReasonInvalidName},
	}
	var keys []string
	for _, tt := range tests {
		e := checkMetric(morse.NewLineMetric(morse.LineText{Text: tt.text, Uints: tt.uints}, time.Unix(1, 0)), DefaultMaxNameLen, &keys)
		if tt.reason == "" {
			require.Nil(t, e, tt.text)
			continue
		}
		require.NotNil(t, e, tt.text)
		require.Equal(t, tt.reason, e.Reason, tt.text)
	}
	m := morse.NewMetric("cpu", nil, []morse.Field{{Key: "u", Value: morse.Uint(math.MaxUint64)}}, time.Unix(1, 0))
	require.Equal(t, ReasonUnsupportedValue, checkMetric(m, DefaultMaxNameLen, &keys).Reason)
	m = morse.NewMetric("cpu", []morse.Tag{{Key: "Host", Value: "a"}}, []morse.Field{{Key: "host", Value: morse.Int(7)}}, time.Unix(1, 0))
	require.Equal(t, ReasonInvalidName, checkMetric(m, DefaultMaxNameLen, &keys).Reason)
	m = morse.NewMetric("cpu", nil, []morse.Field{{Key: "v", Value: morse.Int(1)}, {Key: "V", Value: morse.Int(2)}}, time.Unix(1, 0))
	require.Equal(t, ReasonInvalidName, checkMetric(m, DefaultMaxNameLen, &keys).Reason)
}

func TestParseConf(t *testing.T) {
	tests := []struct {
		conf string
		want settings
		err  string
	}{
		{conf: "http::addr=db:9000;username=admin;password=quest;", want: settings{http: true, addr: "db:9000", username: "admin", password: "quest"}},
		{conf: "https::addr=db:9000;token=abc;tls_verify=unsafe_off;auto_flush_rows=5000;retry_timeout=10000", want: settings{http: true, tls: true, addr: "db:9000", token: "abc", tlsInsecure: true}},
		{conf: "http::addr=db:9000;password=semi;;colon;;;", want: settings{http: true, addr: "db:9000", password: "semi;colon;"}},
		{conf: "tcp::addr=db:9009;request_timeout=2500;request_min_throughput=1000;max_name_len=64;protocol_version=1;", want: settings{addr: "db:9009", timeout: 2500 * time.Millisecond, minThroughput: 1000, maxNameLen: 64}},
		{conf: "tcps::addr=db:9009;tls_roots=/ca.pem;tls_ca=pem_file;", want: settings{tls: true, addr: "db:9009", tlsRoots: "/ca.pem"}},
		{conf: "http::addr=db;", want: settings{http: true, addr: "db:9000"}}, // QuestDB's ports by default
		{conf: "tcp::addr=[::1];", want: settings{addr: "[::1]:9009"}},
		{conf: "addr=db:9000;", err: "no schema"},
		{conf: "udp::addr=db:9009;", err: `schema "udp"`},
		{conf: "http::username=a;", err: "addr is missing"},
		{conf: "http::addr=db;bogus=1;", err: "bogus: unknown key"},
		{conf: "http::addr=;", err: "addr: empty value"},
		{conf: "tcp::addr=db;password=x;", err: "only ILP over HTTP takes a password"},
		{conf: "http::addr=db;protocol_version=2;", err: "protocol version 1"},
		{conf: "http::addr=db;tls_roots_password=x;", err: "PEM file"},
		{conf: "http::addr=db;request_timeout=-1;", err: "positive integer"},
	}
	for _, tt := range tests {
		got, err := parseConf(tt.conf)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.conf)
			continue
		}
		require.NoError(t, err, tt.conf)
		want := tt.want
		want.timeout = max(want.timeout, 0)
		if want.timeout == 0 {
			want.timeout = DefaultTimeout
		}
		if want.minThroughput == 0 {
			want.minThroughput = DefaultMinThroughput
		}
		if want.maxNameLen == 0 {
			want.maxNameLen = DefaultMaxNameLen
		}
		require.Equal(t, want, got, tt.conf)
	}
}

func TestConfigKeys(t *testing.T) {
	key, _, _ := newTCPKey(t)
	tests := []struct {
		name string
		set  func(o *QuestDB)
		err  string
	}{
		{"defaults", func(*QuestDB) {}, ""},
		{"conf and addr", func(o *QuestDB) { o.Conf = "http::addr=a:1;"; o.Addr = "b:2" }, "conf: set either conf"},
		{"bad conf hides its value", func(o *QuestDB) { o.Conf = "http::addr=a:1;password=hunter2;nope=1;" }, "nope: unknown key"},
		{"protocol", func(o *QuestDB) { o.Protocol = "udp" }, "protocol:"},
		{"tcp password", func(o *QuestDB) { o.Protocol = "tcp"; o.Password = "x" }, "password:"},
		{"tcp key without id", func(o *QuestDB) { o.Protocol = "tcp"; o.Token = morse.Secret(key) }, "token:"},
		{"tcp bad key", func(o *QuestDB) { o.Protocol = "tcp"; o.Username = "id"; o.Token = "not base64!" }, "token:"},
		{"tcp key", func(o *QuestDB) { o.Protocol = "tcp"; o.Username = "id"; o.Token = morse.Secret(key) }, ""},
		{"token and user", func(o *QuestDB) { o.Token = "t"; o.Username = "u" }, "token:"},
		{"half a client cert", func(o *QuestDB) { o.Cert = "c.pem" }, "tls_cert"},
		{"negative delay", func(o *QuestDB) { o.TCPConfirmDelay = -1 }, "tcp_confirm_delay"},
		{"delay past the timeout", func(o *QuestDB) { o.Protocol = "tcp"; o.TCPConfirmDelay = o.Timeout }, "tcp_confirm_delay: must be shorter"},
		{"delay past the timeout over http", func(o *QuestDB) { o.TCPConfirmDelay = o.Timeout }, ""},
		{"negative unconfirmed", func(o *QuestDB) { o.TCPUnconfirmedBatches = -1 }, "tcp_unconfirmed_batches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New()
			tt.set(o)
			err := o.Validate()
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
			require.NotContains(t, err.Error(), "hunter2")
		})
	}
	s, err := New().resolve()
	require.NoError(t, err)
	require.Equal(t, "localhost:9000", s.addr)
	o := New()
	o.Protocol = "tcp"
	s, err = o.resolve()
	require.NoError(t, err)
	require.Equal(t, "localhost:9009", s.addr)
	require.Equal(t, 1, o.MaxConcurrentWrites())
	require.Equal(t, 4, New().MaxConcurrentWrites())
}

// regexpOption finds a commented option in the sample.
var regexpOption = regexp.MustCompile(`(?m)^  # ([a-z_]+ = .*)$`)

// TestSampleConfig decodes the sample with every option uncommented: each is a field of
// the output, and the result is valid but for TLS files without https or tcps.
func TestSampleConfig(t *testing.T) {
	info, ok := morse.DefaultRegistry().Output("questdb")
	require.True(t, ok)
	require.True(t, strings.HasPrefix(info.SampleConfig, "# "+Description+"\n[[outputs.questdb]]\n"))
	all := regexpOption.ReplaceAllString(sampleConfig, "  $1")
	var doc struct {
		Outputs struct {
			QuestDB []*QuestDB `toml:"questdb"`
		} `toml:"outputs"`
	}
	doc.Outputs.QuestDB = []*QuestDB{New()}
	md, err := toml.Decode(all, &doc)
	require.NoError(t, err)
	require.Empty(t, md.Undecoded(), "keys the output does not know")
	o := doc.Outputs.QuestDB[0]
	require.Equal(t, morse.Duration(2*time.Second), o.TCPConfirmDelay)
	require.Equal(t, morse.Size(100*1024), o.MinThroughput)
	require.ErrorContains(t, o.Validate(), "tls_* options need protocol", "the sample's TLS files with plain http")
}

// TestScratchKeptAndReady: a write's scratch is ready on an output built without New, and
// the one put back is the one the next write gets.
func TestScratchKeptAndReady(t *testing.T) {
	var o QuestDB
	s := o.getScratch()
	s.groups.AddPosition("cpu")
	o.putScratch(s)
	require.Same(t, s, o.getScratch())

	s.text = make([]byte, 0, maxKeptBytes+1) // grown for an unusually large batch
	o.putScratch(s)
	require.NotSame(t, s, o.getScratch(), "not kept")
}
