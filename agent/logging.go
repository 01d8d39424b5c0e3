package agent

import (
	"context"
	"log/slog"

	"github.com/morse-agent/morse/config"
)

// pluginLogger is the logger of one plugin: the agent's, with the plugin's name and alias,
// and with the plugin's own log_level in place of the agent's when it sets one.
func pluginLogger(base *slog.Logger, kind, name, alias string, level config.LogLevel) *slog.Logger {
	if lv, ok := level.Level(); ok {
		base = slog.New(levelHandler{inner: base.Handler(), level: lv})
	}
	l := base.With("plugin", kind+"."+name)
	if alias != "" {
		l = l.With("alias", alias)
	}
	return l
}

// levelHandler decides for itself which levels pass, then hands the record to the agent's
// handler. slog asks Enabled before Handle, and a handler's Handle does not test the level
// again, so a plugin may log more, or less, than the agent's level lets the others.
type levelHandler struct {
	inner slog.Handler
	level slog.Level
}

// Enabled implements slog.Handler.
func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

// Handle implements slog.Handler.
func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{inner: h.inner.WithAttrs(as), level: h.level}
}

// WithGroup implements slog.Handler.
func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{inner: h.inner.WithGroup(name), level: h.level}
}
