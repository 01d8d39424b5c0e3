package influxquery

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestColumnTypeString(t *testing.T) {
	for _, tc := range []struct {
		typ  ColumnType
		want string
	}{
		{ColumnNull, "null"},
		{ColumnFloat, "float"},
		{ColumnInt, "int"},
		{ColumnUint, "uint"},
		{ColumnString, "string"},
		{ColumnBool, "bool"},
		{ColumnMixed, "mixed"},
		{ColumnMixed + 1, "ColumnType(7)"},
		{255, "ColumnType(255)"},
	} {
		require.Equal(t, tc.want, tc.typ.String())
		require.Equal(t, tc.want, fmt.Sprint(tc.typ), "fmt uses String")
	}
	var c Column
	c.AppendInt(1)
	c.AppendString("x")
	require.Equal(t, "column type mixed", fmt.Sprintf("column type %v", c.Type))
}

func TestColumnPromotion(t *testing.T) {
	var c Column
	c.AppendNull()
	c.AppendInt(2)
	c.AppendFloat(2.5)
	require.Equal(t, ColumnFloat, c.Type)
	require.Equal(t, []float64{0, 2, 2.5}, c.Floats)
	require.Nil(t, c.Value(0))
	c.AppendInt(-1)
	c.AppendUint(7)
	require.Equal(t, []float64{0, 2, 2.5, -1, 7}, c.Floats)
	c.AppendBool(true)
	require.Equal(t, ColumnMixed, c.Type)
	require.Equal(t, []any{nil, 2.0, 2.5, -1.0, 7.0, true}, c.Mixed)
	require.Equal(t, 6, c.Len())
	require.Equal(t, 1, c.NullCount())

	var u Column
	u.AppendUint(math.MaxUint64)
	u.AppendInt(-1)
	require.Equal(t, ColumnMixed, u.Type)

	var nulls Column
	for range 130 {
		nulls.AppendNull()
	}
	nulls.AppendString("late")
	require.Equal(t, 130, nulls.NullCount())
	require.Equal(t, "late", nulls.Value(130))
	require.Len(t, nulls.Strings, 131)
}
