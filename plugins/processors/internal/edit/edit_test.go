package edit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse"
)

func fixture() morse.Metric {
	return morse.NewMetric("m",
		[]morse.Tag{{Key: "b", Value: "2"}, {Key: "d", Value: "4"}},
		[]morse.Field{{Key: "x", Value: morse.Int(1)}, {Key: "y", Value: morse.Int(2)}},
		time.Unix(1, 0))
}

func TestEditsFollowTelegrafsMetric(t *testing.T) {
	orig := fixture()
	e := Start(orig)
	e.SetTag("c", "3")  // inserted in key order
	e.SetTag("b", "20") // replaced
	e.RemoveTag("d")    // removed
	require.True(t, e.RenameTag("c", "a"))
	e.SetField("y", morse.Int(20))  // replaced in place
	e.SetField("z", morse.Int(3))   // appended
	e.MoveField("x", morse.Int(10)) // removed and added: goes last
	e.RenameFieldInPlace("y", "w")  // keeps its place
	e.SetName("n")
	e.SetTime(time.Unix(2, 0))
	require.True(t, e.Changed())
	m := e.Metric()
	require.Equal(t, "n", m.Name())
	require.Equal(t, []morse.Tag{{Key: "a", Value: "3"}, {Key: "b", Value: "20"}}, m.Tags())
	require.Equal(t, []morse.Field{{Key: "w", Value: morse.Int(20)}, {Key: "z", Value: morse.Int(3)}, {Key: "x", Value: morse.Int(10)}}, m.Fields())
	require.Equal(t, time.Unix(2, 0), m.Time())
	require.Equal(t, fixture(), orig, "the original is untouched")
}

func TestNoChangeNoCopy(t *testing.T) {
	orig := fixture()
	e := Start(orig)
	e.SetTag("b", "2")
	e.SetField("x", morse.Int(1))
	e.RemoveTag("nope")
	e.RemoveField("nope")
	require.False(t, e.Changed())
	m := e.Metric()
	require.Same(t, &orig.Tags()[0], &m.Tags()[0], "same slices")
	require.Same(t, &orig.Fields()[0], &m.Fields()[0])
	var buf KeyBuf
	require.Equal(t, []string{"b", "d"}, e.AppendTagKeys(buf[:0]))
	require.Equal(t, []string{"x", "y"}, e.AppendFieldKeys(buf[:0]))
}
