package morse

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2")
	var out strings.Builder
	slog.New(slog.NewTextHandler(&out, nil)).Info("config", "password", s)
	text, _ := s.MarshalText()
	for _, shown := range []string{fmt.Sprint(s), fmt.Sprintf("%v %s %#v %+v", s, s, s, s), out.String(), string(text)} {
		require.NotContains(t, shown, "hunter2")
	}
	require.True(t, s.Matches("hunter2"))
	require.False(t, s.Matches("hunter"))
	require.False(t, s.Matches("hunter22"))
	require.False(t, Secret("").Matches(""), "an unset secret matches nothing")
	require.True(t, SecretEqual("", ""))
}
