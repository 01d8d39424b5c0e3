package freelist

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListKeepsUpToMaxAcrossCollections: objects put back come out again, newest first, and
// still after garbage collections (where a sync.Pool would have dropped them); beyond Max
// they are let go.
func TestListKeepsUpToMaxAcrossCollections(t *testing.T) {
	made := 0
	l := &List[[]byte]{Max: 2, New: func() *[]byte { made++; b := make([]byte, 0, 64); return &b }}
	a, b, c := l.Get(), l.Get(), l.Get()
	require.Equal(t, 3, made)
	l.Put(a)
	l.Put(b)
	l.Put(c)
	require.Equal(t, 2, l.Len(), "the third is let go")
	runtime.GC()
	runtime.GC()
	require.Same(t, b, l.Get(), "the newest first, kept across collections")
	require.Same(t, a, l.Get())
	require.Equal(t, 3, made)
	l.Get()
	require.Equal(t, 4, made, "an empty list makes a new one")
}

func TestListZeroValue(t *testing.T) {
	var l List[int]
	xs := make([]*int, DefaultMax+1)
	for i := range xs {
		xs[i] = l.Get()
		require.NotNil(t, xs[i], "new(T) without New")
	}
	for _, x := range xs {
		l.Put(x)
	}
	require.Equal(t, DefaultMax, l.Len(), "without Max, DefaultMax")
}

// TestListConcurrent: concurrent Gets and Puts never hand one object to two users at once.
func TestListConcurrent(t *testing.T) {
	l := &List[int]{Max: 4}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				x := l.Get()
				*x++
				require.Equal(t, 1, *x, "an object is in one user's hands at a time")
				*x--
				l.Put(x)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, l.Len(), 4)
}

func BenchmarkListGetPut(b *testing.B) {
	l := &List[[]byte]{Max: 4}
	b.ReportAllocs()
	for b.Loop() {
		l.Put(l.Get())
	}
}

func BenchmarkPoolGetPut(b *testing.B) {
	p := sync.Pool{New: func() any { return new([]byte) }}
	b.ReportAllocs()
	for b.Loop() {
		p.Put(p.Get())
	}
}
