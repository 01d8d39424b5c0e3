package systemd_units //nolint:revive // the package is named as the plugin, as Telegraf's

// The numeric codes of systemd's load, active and sub states, as Telegraf 1.39.3 maps them
// after systemd's state tables (src/basic/unit-def.c): the sub states of each unit type
// start at a multiple of 0x10, and a name that two types share keeps its first code.
var (
	loadCodes = map[string]int64{
		"loaded": 0, "stub": 1, "not-found": 2, "bad-setting": 3, "error": 4, "merged": 5, "masked": 6,
	}

	activeCodes = map[string]int64{
		"active": 0, "reloading": 1, "inactive": 2, "failed": 3, "activating": 4, "deactivating": 5,
	}

	subCodes = map[string]int64{
		// service
		"running": 0x0000, "dead": 0x0001, "start-pre": 0x0002, "start": 0x0003, "exited": 0x0004,
		"reload": 0x0005, "stop": 0x0006, "stop-watchdog": 0x0007, "stop-sigterm": 0x0008,
		"stop-sigkill": 0x0009, "stop-post": 0x000a, "final-sigterm": 0x000b, "failed": 0x000c,
		"auto-restart": 0x000d, "condition": 0x000e, "cleaning": 0x000f,
		// automount, and the service states that newer systemd added after the table filled
		"waiting": 0x0010, "reload-signal": 0x0011, "reload-notify": 0x0012, "final-watchdog": 0x0013,
		"dead-before-auto-restart": 0x0014, "failed-before-auto-restart": 0x0015,
		"dead-resources-pinned": 0x0016, "auto-restart-queued": 0x0017,
		// device
		"tentative": 0x0020, "plugged": 0x0021,
		// mount
		"mounting": 0x0030, "mounting-done": 0x0031, "mounted": 0x0032, "remounting": 0x0033,
		"unmounting": 0x0034, "remounting-sigterm": 0x0035, "remounting-sigkill": 0x0036,
		"unmounting-sigterm": 0x0037, "unmounting-sigkill": 0x0038,
		// scope
		"abandoned": 0x0050,
		// slice
		"active": 0x0060,
		// socket
		"start-chown": 0x0070, "start-post": 0x0071, "listening": 0x0072, "stop-pre": 0x0073,
		"stop-pre-sigterm": 0x0074, "stop-pre-sigkill": 0x0075, "final-sigkill": 0x0076,
		// swap
		"activating": 0x0080, "activating-done": 0x0081, "deactivating": 0x0082,
		"deactivating-sigterm": 0x0083, "deactivating-sigkill": 0x0084,
		// timer
		"elapsed": 0x00a0,
	}
)
