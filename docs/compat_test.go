package docs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompatRows reads the page's tables: a plugin's row, a row naming several keys, the
// table of options every plugin takes, and no row for a behaviour.
func TestCompatRows(t *testing.T) {
	byKey := map[string]Row{}
	for _, r := range CompatRows() {
		byKey[r.Section+"/"+r.Kind+"/"+r.Key] = r
	}
	pipe := byKey["inputs.tail//pipe"]
	require.Equal(t, "different", pipe.Status)
	require.Equal(t, "inputstail", pipe.Anchor)
	require.Equal(t, "warned", byKey["[agent]//snmp_translator"].Status)
	require.Equal(t, "agent", byKey["[agent]//snmp_translator"].Anchor)
	require.Equal(t, byKey["inputs.influxdb_listener//read_timeout"].Status, byKey["inputs.influxdb_listener//write_timeout"].Status)
	require.Equal(t, "same", byKey["Options every plugin takes/all/alias"].Status)
	for k := range byKey {
		require.NotContains(t, k, "(", "behaviour rows are no options")
	}
	require.Equal(t, "outputsinfluxdb_v2", Anchor("outputs.influxdb_v2"))
	require.Equal(t, "inputsswap-inputsnetstat", Anchor("inputs.swap, inputs.netstat"))
}
