package httpout

import (
	"net/http"
	"sync"
)

// Released waits until the transport no longer reads the body of req, a request of
// NewRequest. Call it once Do returned and the answer's body was closed, before the bytes of
// the body are written again: net/http may go on sending a body after Do returned (an answer
// that came before the whole body was sent, a timeout, or only the order in which its
// goroutines run), and a buffer reused at once would be sent half old, half new. The wait is
// short: net/http promises to close every request body, which it does as soon as it has
// written it or met an error, and it closes the connection of an answered request whose body
// is still being sent within 50 ms, which ends the write.
func Released(req *http.Request) {
	if refs, _ := req.Context().Value(refsKey{}).(*bodyRefs); refs != nil {
		refs.wait()
	}
}

// refsKey is the context key of a request's bodyRefs.
type refsKey struct{}

// bodyRefs counts the bodies of one request that the transport has not closed yet: the
// first, and any that GetBody made for a retry.
type bodyRefs struct {
	mu   sync.Mutex
	open int
	idle chan struct{} // closed when open falls to 0; a new one when it rises from 0
}

// body returns a new body of b that counts as open until it is closed.
func (r *bodyRefs) body(b []byte) *memBody {
	r.mu.Lock()
	if r.open == 0 {
		r.idle = make(chan struct{})
	}
	r.open++
	r.mu.Unlock()
	body := &memBody{refs: r}
	body.r.Reset(b)
	return body
}

func (r *bodyRefs) release() {
	r.mu.Lock()
	if r.open--; r.open == 0 {
		close(r.idle)
	}
	r.mu.Unlock()
}

// wait waits until no body is open.
func (r *bodyRefs) wait() {
	r.mu.Lock()
	open, idle := r.open, r.idle
	r.mu.Unlock()
	if open > 0 {
		<-idle
	}
}
