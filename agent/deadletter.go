package agent

import (
	"sync"

	"github.com/morse-agent/morse/batch"
	"github.com/morse-agent/morse/config"
	"github.com/morse-agent/morse/plugins/serializers/influx"
)

// deadLetterFiles shares one open DeadLetterFile per path among the outputs that name it.
// A config never gives two outputs one file (config refuses it), but a reload starts the new
// instance of a changed output while the old one still drains, and both must append through
// one DeadLetterFile: two would each rotate the file on their own, and one would then append
// to a file the other had rotated away, or remove it, and lose metrics no counter knows of.
// Sharing keeps the old instance draining, where closing it first would drop its buffer.
type deadLetterFiles struct {
	mu    sync.Mutex
	files map[string]*sharedDeadLetter // by config.DeadLetterKey
}

type sharedDeadLetter struct {
	dl   *batch.DeadLetterFile
	refs int // the outputs that hold it
}

// open returns the dead-letter file at path, opening it unless an output holds it already,
// and the function that gives this hold back; the last one closes the file.
func (s *deadLetterFiles) open(path string, maxSize int64) (*batch.DeadLetterFile, func() error, error) {
	key := config.DeadLetterKey(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.files[key]
	if ok {
		sh.dl.SetMaxSize(maxSize) // the newest config's bound
	} else {
		// The dead letter keeps every type: unsigned integers stay `u`, as they arrived.
		ser := influx.New(influx.Options{UintSupport: true})
		dl, err := batch.OpenDeadLetterFile(path, maxSize, ser.AppendMetric)
		if err != nil {
			return nil, nil, err
		}
		sh = &sharedDeadLetter{dl: dl}
		if s.files == nil {
			s.files = map[string]*sharedDeadLetter{}
		}
		s.files[key] = sh
	}
	sh.refs++
	var once sync.Once
	var closeErr error
	release := func() error {
		once.Do(func() { closeErr = s.release(key, sh) })
		return closeErr
	}
	return sh.dl, release, nil
}

func (s *deadLetterFiles) release(key string, sh *sharedDeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh.refs--; sh.refs > 0 {
		return nil
	}
	if s.files[key] == sh {
		delete(s.files, key)
	}
	return sh.dl.Close()
}
