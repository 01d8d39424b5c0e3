package testserver_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.StopSharedIoTDB()
	testserver.StopSharedNginx()
	testserver.StopSharedSnmpd()
	testserver.StopSharedPHPFPM()
	os.Exit(code)
}

// TestIoTDBStoresAcrossRestart starts the image, writes a value by SQL, reads it back over
// REST v2, and reads it again after a stop and a start at the same URL.
func TestIoTDBStoresAcrossRestart(t *testing.T) {
	s := testserver.SharedIoTDB(t)
	t.Logf("IoTDB at %s, ready in %s", s.URL(), s.Startup)
	s.NonQuery(t, "insert into root.harness.d1(time, v) values(1000, 42)")
	check := func() {
		r := s.Query(t, "select v from root.harness.d1")
		require.Equal(t, []string{"root.harness.d1.v"}, r.Expressions)
		require.Equal(t, []int64{1000}, r.Timestamps)
		require.Equal(t, [][]any{{json.Number("42.0")}}, r.Values)
	}
	check()
	url := s.URL()
	s.Stop(t)
	s.Start(t)
	require.Equal(t, url, s.URL())
	check()
}
