package mysql

import (
	"strings"
	"sync"
)

// lowerCache is a concurrency-safe cache of lower-cased names, bounded so that a server
// that invents names cannot grow it without end.
type lowerCache struct {
	mu sync.RWMutex
	m  map[string]string
}

const maxLowerKeys = 10000

func (c *lowerCache) lower(b []byte) string {
	c.mu.RLock()
	s, ok := c.m[string(b)] // no allocation for the lookup
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = strings.ToLower(string(b))
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]string, 1024)
	}
	if len(c.m) < maxLowerKeys {
		c.m[string(b)] = s
	}
	c.mu.Unlock()
	return s
}
