// Package all registers every input plugin. It lives under plugins/inputs so that it may
// import plugins/inputs/internal, which Go's internal-package rule hides from the rest of the
// module.
package all

import (
	_ "github.com/morse-agent/morse/plugins/inputs/cpu"      // registers inputs.cpu
	_ "github.com/morse-agent/morse/plugins/inputs/internal" // registers inputs.internal
	_ "github.com/morse-agent/morse/plugins/inputs/mem"      // registers inputs.mem
)
