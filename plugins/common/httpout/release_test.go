package httpout

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/morse-agent/morse/internal/testserver"
)

// TestReleasedBeforeReuse: a server answers before it reads the body, as a proxy with a body
// limit may, so Go's transport is still sending the body when Do returns. Once Released
// returns, the buffer is the caller's again: rewriting it is no data race (the race detector
// checks; without Released it reports one), and the body was closed.
func TestReleasedBeforeReuse(t *testing.T) {
	url := testserver.EarlyTooLarge(t, 1<<10, `{"error":"Request Entity Too Large"}`, func([]byte) {})
	tr, err := NewTransport(Options{})
	require.NoError(t, err)
	client := &http.Client{Transport: tr}
	body := make([]byte, 8<<20)
	for range 3 {
		req, err := NewRequest(context.Background(), http.MethodPost, url+"/write", body)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err == nil { // or the transport's write failed first: either way it let go of body
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
			require.NoError(t, resp.Body.Close())
		}
		Released(req)
		refs := req.Context().Value(refsKey{}).(*bodyRefs)
		refs.mu.Lock()
		require.Zero(t, refs.open, "every body the transport took is closed")
		refs.mu.Unlock()
		for i := range body {
			body[i]++
		}
	}
}

// TestReleasedOfAnEmptyBody: a request without a body has nothing to wait for.
func TestReleasedOfAnEmptyBody(t *testing.T) {
	req, err := NewRequest(context.Background(), http.MethodPost, "http://127.0.0.1:1/", nil)
	require.NoError(t, err)
	Released(req)
}
