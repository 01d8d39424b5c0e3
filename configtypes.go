package morse

import "github.com/morse-agent/morse/internal/config"

// Duration is a time.Duration that config files write as "10s", "1m30s" or "500ms". Plugin
// config structs use it for every duration option.
type Duration = config.Duration

// Size is a byte count that config files write as "32MiB", "512KB" or a bare integer.
type Size = config.Size
