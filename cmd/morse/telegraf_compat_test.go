package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testutil"
)

// compatDir holds one config per plugin with every option of Telegraf 1.39.3's sample.conf
// set (its README says how they were written); plugins/all loads each table into its plugin.
var compatDir = filepath.Join("..", "..", "testdata", "telegraf")

var (
	serviceAddress = regexp.MustCompile(`(?m)^(\s*service_address\s*=\s*")([a-z]+://)?[^"]*:\d+"`)
	brokers        = regexp.MustCompile(`(?m)^(\s*(?:brokers|servers)\s*=\s*)\[[^\]]*\]`)
	tlsFile        = regexp.MustCompile(`(?m)^(\s*)(tls_ca|tls_cert|tls_key)(\s*=\s*)"[^"]*"`)
	allowedCAs     = regexp.MustCompile(`(?m)^(\s*tls_allowed_cacerts\s*=\s*)\[[^\]]*\]`)
	// A MySQL DSN keeps its form; only its address changes.
	dsnAddr = regexp.MustCompile(`tcp\([^)]*\)`)
)

// localOnly points the listeners of a compat config at ports the kernel picks, its brokers
// and servers at a loopback port that nothing listens on, and its TLS files at a throw-away CA's, so
// that --test opens nothing it was not given at run time.
func localOnly(t *testing.T, text string, certs *testutil.Certs) string {
	text = tlsFile.ReplaceAllStringFunc(text, func(s string) string {
		m := tlsFile.FindStringSubmatch(s)
		file := map[string]string{"tls_ca": certs.CA, "tls_cert": certs.ServerCert, "tls_key": certs.ServerKey}[m[2]]
		return m[1] + m[2] + m[3] + strconv.Quote(file)
	})
	text = allowedCAs.ReplaceAllString(text, `${1}[`+strconv.Quote(certs.CA)+`]`)
	text = serviceAddress.ReplaceAllString(text, `${1}${2}127.0.0.1:0"`)
	if dsnAddr.MatchString(text) {
		return dsnAddr.ReplaceAllString(text, "tcp("+testutil.FreeAddr(t)+")")
	}
	return brokers.ReplaceAllString(text, `${1}["`+testutil.FreeAddr(t)+`"]`)
}

// TestTelegrafSampleConfigsRunUnderTest runs `morse --test` on each compat config: every
// option of Telegraf's sample set, as an operator's telegraf.conf would have it. Each must
// load and run; files and servers the options name that do not exist here may only make a
// gather fail, which --test logs and then exits 1 for. A config without an input gets inputs.mem, whose metrics
// must come out through the processors and aggregators it sets.
func TestTelegrafSampleConfigsRunUnderTest(t *testing.T) {
	entries, err := os.ReadDir(compatDir)
	require.NoError(t, err)
	dir := t.TempDir()
	certs := testutil.NewCerts(t)
	ran := 0
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".conf")
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(compatDir, e.Name()))
			require.NoError(t, err)
			text := localOnly(t, string(b), certs)
			input := strings.HasPrefix(name, "inputs.")
			if !input {
				text += "\n[[inputs.mem]]\n"
			}
			conf := writeFile(t, dir, e.Name(), "[agent]\n  omit_hostname = true\n"+text)
			out, stderr, code := runMorse(t, "--config", conf, "--test")
			if code != 0 {
				// A gather that failed on what is not here makes --test exit 1, after
				// everything was printed; any other failure is the config's.
				require.Equal(t, 1, code, "%s\n%s", stderr, out)
				require.Contains(t, stderr, "input plugins recorded", "%s\n%s", stderr, out)
			}
			require.NotRegexp(t, `E! \[\S+\] init`, stderr)
			if !input && !strings.HasPrefix(name, "aggregators.") {
				require.Contains(t, out, "> ", "inputs.mem's metrics come out:\n%s", stderr)
			}
			ran++
		})
	}
	require.Greater(t, ran, 20)
}
