package exec

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// Command is one command to run: the program and its arguments. Telegraf 1.39 writes it as
// an array of strings (commands = [["echo", "value 1"]]); the older form, one string split
// into words as a shell would, is accepted too, as Telegraf still accepts it.
type Command []string

// UnmarshalTOML takes a string or an array of strings.
func (c *Command) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		words, err := splitWords(x)
		if err != nil {
			return fmt.Errorf("unable to parse command %q: %w", x, err)
		}
		if len(words) == 0 {
			return fmt.Errorf("command cannot be empty")
		}
		*c = words
		return nil
	case []any:
		if len(x) == 0 {
			return fmt.Errorf("command cannot be empty")
		}
		words := make([]string, 0, len(x))
		for _, w := range x {
			s, ok := w.(string)
			if !ok {
				return fmt.Errorf("command %v has invalid entry %v of type %T, expected string", x, w, w)
			}
			words = append(words, s)
		}
		*c = words
		return nil
	}
	return fmt.Errorf("command %v has invalid type %T, expected a string or a list of strings", v, v)
}

// String is the command as one line, for messages.
func (c Command) String() string { return strings.Join(c, " ") }

// maxLoggedStderr bounds what log_stderr reads of one run's stderr, so that a runaway
// script cannot flood the journal.
const maxLoggedStderr = 64 << 10

// logStderr logs each line a command wrote to stderr, as Telegraf's log_stderr does: a
// line that starts with Telegraf's level prefix (E!, W!, I!, D!, T!) is logged at that
// level without it, any other line as an error.
func logStderr(l *slog.Logger, command Command, stderr []byte) {
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		msg := sc.Text()
		if strings.TrimSpace(msg) == "" {
			continue
		}
		level := slog.LevelError
		if len(msg) >= 3 && msg[1:3] == "! " {
			switch msg[0] {
			case 'E':
				msg = msg[3:]
			case 'W':
				level, msg = slog.LevelWarn, msg[3:]
			case 'I':
				level, msg = slog.LevelInfo, msg[3:]
			case 'D', 'T':
				// slog has no trace level; Telegraf's trace is the finest debug.
				level, msg = slog.LevelDebug, msg[3:]
			}
		}
		l.Log(context.Background(), level, msg, "command", command.String())
	}
}

// limitedBuffer keeps the first max bytes written to it and discards the rest, reporting
// every write as complete so that the command is never stopped by a full pipe.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }
