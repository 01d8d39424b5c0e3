package loadgen

// valueKind is the line-protocol type of a generated field.
type valueKind uint8

// The five field types line protocol knows.
const (
	kindFloat valueKind = iota
	kindInt
	kindUint
	kindString
	kindBool
)

// tagDef describes one tag key of a measurement. A required tag is on every line; an
// optional one is on about half of them, so that lines carry between two and six tags.
type tagDef struct {
	key      string
	required bool
	// values are the tag values to pick from. The host tag leaves it empty and draws from
	// the generator's host names instead.
	values []string
}

// fieldDef describes one field key. Each key has one fixed type, because a real database
// refuses a line whose field type conflicts with what it already stored, and the tool must
// be usable against one.
type fieldDef struct {
	key      string
	kind     valueKind
	min, max float64 // the range of numeric values
	words    []string
}

// measurement is the schema of one measurement. Its first field is on every line: the
// verifier counts that field to count the lines that arrived.
type measurement struct {
	name   string
	weight int // relative share of the generated lines
	tags   []tagDef
	fields []fieldDef
}

// The tag value sets. A few values carry the characters that line protocol must escape in
// tag values (space, comma, equals), so that receivers exercise their escape handling.
var (
	regions   = []string{"us-east-1", "us-west-2", "eu-central-1", "ap-south-1", "sa east"}
	envs      = []string{"prod", "staging", "dev", "canary"}
	racks     = []string{"r01", "r02", "r03", "r04", "r05", "r06"}
	cpus      = []string{"cpu-total", "cpu0", "cpu1", "cpu2", "cpu3", "cpu4", "cpu5", "cpu6", "cpu7"}
	paths     = []string{"/", "/var", "/home", "/var/lib/docker", "/mnt/backup disk", "/srv/a,b", "/data/x=1"}
	devices   = []string{"sda1", "sda2", "nvme0n1p1", "nvme1n1", "dm-0"}
	fstypes   = []string{"ext4", "xfs", "btrfs", "overlay"}
	ifaces    = []string{"eth0", "eth1", "lo", "bond0", "docker0", "wlan 0"}
	methods   = []string{"GET", "POST", "PUT", "DELETE"}
	statuses  = []string{"200", "201", "204", "301", "400", "404", "500", "503"}
	endpoints = []string{"/", "/api/v1/users", "/api/v1/query?db=a,b", "/login", "/search?q=a b", "/k=v"}
	services  = []string{"frontend", "billing", "auth", "search api"}
	apps      = []string{"nginx", "postgres", "redis", "my app", "cron"}
	severity  = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}
)

// The string field value sets. Some hold a double quote or a backslash, the two characters
// a string field must escape. None holds a newline: a receiver counting lines by newlines
// (the sink) would miscount, and line protocol writers pass newlines in strings through raw.
var (
	messages = []string{
		"connection established", "user logged in", `said "hello" twice`,
		`path C:\Temp\new`, "disk almost full", `quote " and backslash \ together`,
		"request timed out after 30s", "cache miss", `trailing backslash \`,
	}
	agents = []string{"curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64)", "Go-http-client/1.1", `bot "crawler"`}
	cache  = []string{"HIT", "MISS", "EXPIRED", "BYPASS"}
	procid = []string{"1", "42", "1337", "-"}
)

// measurements is the fixed schema the generator draws from, modelled on what Telegraf's
// cpu, mem, disk, net, syslog and an application's request log emit. Tags are listed in
// key order, as Telegraf writes them.
var measurements = []measurement{
	{name: "cpu", weight: 30, tags: []tagDef{
		{key: "cpu", required: true, values: cpus},
		{key: "env", values: envs},
		{key: "host", required: true},
		{key: "rack", values: racks},
		{key: "region", values: regions},
		{key: "zone", values: []string{"a", "b", "c"}},
	}, fields: []fieldDef{
		{key: "usage_user", kind: kindFloat, max: 100},
		{key: "usage_system", kind: kindFloat, max: 100},
		{key: "usage_idle", kind: kindFloat, max: 100},
		{key: "usage_iowait", kind: kindFloat, max: 20},
		{key: "usage_irq", kind: kindFloat, max: 5},
		{key: "usage_steal", kind: kindFloat, max: 5},
		{key: "usage_guest", kind: kindFloat, max: 1},
		{key: "usage_nice", kind: kindFloat, max: 10},
	}},
	{name: "mem", weight: 10, tags: []tagDef{
		{key: "env", values: envs},
		{key: "host", required: true},
		{key: "region", required: true, values: regions},
	}, fields: []fieldDef{
		{key: "available_percent", kind: kindFloat, max: 100},
		{key: "total", kind: kindUint, min: 1 << 30, max: 1 << 38},
		{key: "used", kind: kindUint, max: 1 << 37},
		{key: "free", kind: kindUint, max: 1 << 36},
		{key: "cached", kind: kindUint, max: 1 << 35},
		{key: "active", kind: kindInt, max: 1 << 35},
		{key: "swap_used", kind: kindInt, max: 1 << 32},
	}},
	{name: "disk", weight: 15, tags: []tagDef{
		{key: "device", values: devices},
		{key: "fstype", values: fstypes},
		{key: "host", required: true},
		{key: "mode", values: []string{"rw", "ro"}},
		{key: "path", required: true, values: paths},
		{key: "region", values: regions},
	}, fields: []fieldDef{
		{key: "used_percent", kind: kindFloat, max: 100},
		{key: "free", kind: kindUint, max: 1 << 40},
		{key: "used", kind: kindUint, max: 1 << 40},
		{key: "total", kind: kindUint, min: 1 << 30, max: 1 << 41},
		{key: "inodes_free", kind: kindInt, max: 1 << 26},
		{key: "inodes_used", kind: kindInt, max: 1 << 26},
		{key: "readonly", kind: kindBool},
	}},
	{name: "net", weight: 15, tags: []tagDef{
		{key: "host", required: true},
		{key: "interface", required: true, values: ifaces},
		{key: "region", values: regions},
	}, fields: []fieldDef{
		{key: "bytes_recv", kind: kindUint, max: 1 << 45},
		{key: "bytes_sent", kind: kindUint, max: 1 << 45},
		{key: "packets_recv", kind: kindUint, max: 1 << 35},
		{key: "err_in", kind: kindInt, max: 1000},
		{key: "drop_in", kind: kindInt, max: 1000},
		{key: "speed", kind: kindInt, min: -1, max: 100000},
		{key: "up", kind: kindBool},
	}},
	{name: "http_requests", weight: 20, tags: []tagDef{
		{key: "endpoint", values: endpoints},
		{key: "host", required: true},
		{key: "method", required: true, values: methods},
		{key: "region", values: regions},
		{key: "service", values: services},
		{key: "status", values: statuses},
	}, fields: []fieldDef{
		{key: "latency_ms", kind: kindFloat, max: 5000},
		{key: "bytes", kind: kindInt, max: 1 << 24},
		{key: "ok", kind: kindBool},
		{key: "user_agent", kind: kindString, words: agents},
		{key: "cache", kind: kindString, words: cache},
		{key: "retries", kind: kindInt, min: -3, max: 5},
		{key: "upstream_ms", kind: kindFloat, min: -1, max: 1e6},
		{key: "request_id", kind: kindUint, max: 1 << 62},
	}},
	{name: "app events", weight: 5, tags: []tagDef{
		{key: "app", required: true, values: apps},
		{key: "env", values: envs},
		{key: "host", required: true},
		{key: "severity", values: severity},
	}, fields: []fieldDef{
		{key: "value", kind: kindFloat, min: -1e9, max: 1e9},
		{key: "message", kind: kindString, words: messages},
		{key: "code", kind: kindInt, min: -100, max: 100},
		{key: "acked", kind: kindBool},
	}},
	{name: "syslog", weight: 5, tags: []tagDef{
		{key: "appname", required: true, values: apps},
		{key: "facility", values: []string{"kern", "user", "daemon", "auth", "local0"}},
		{key: "host", required: true},
		{key: "severity", values: severity},
	}, fields: []fieldDef{
		{key: "severity_code", kind: kindInt, max: 7},
		{key: "facility_code", kind: kindInt, max: 23},
		{key: "message", kind: kindString, words: messages},
		{key: "procid", kind: kindString, words: procid},
		{key: "version", kind: kindUint, min: 1, max: 2},
	}},
}
