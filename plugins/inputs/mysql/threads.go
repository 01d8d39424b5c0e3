package mysql

import "strings"

// threadStates are the states that gather_process_list counts, each a field
// threads_<state> (spaces as underscores), every one present even at zero.
var threadStates = strings.Split("after create,altering table,analyzing,checking permissions,checking table,"+
	"cleaning up,closing tables,converting heap to myisam,copying to tmp table,creating sort index,"+
	"creating table,creating tmp table,deleting,executing,execution of init_command,end,freeing items,"+
	"flushing tables,fulltext initialization,idle,init,killed,waiting for lock,logging slow query,login,"+
	"manage keys,opening tables,optimizing,preparing,reading from net,removing duplicates,"+
	"removing tmp table,reopen tables,repair by sorting,repair done,repair with keycache,"+
	"replication master,rolling back,searching rows for update,sending data,sorting for group,"+
	"sorting for order,sorting index,sorting result,statistics,updating,waiting for tables,"+
	"waiting for table flush,waiting on cond,writing to net,other", ",")

var knownState = func() map[string]bool {
	m := make(map[string]bool, len(threadStates))
	for _, s := range threadStates {
		m[s] = true
	}
	return m
}()

// stateMappings map plain states to the counted ones.
var stateMappings = map[string]string{
	"user sleep": "idle", "creating index": "altering table",
	"committing alter table to storage engine": "altering table", "discard or import tablespace": "altering table",
	"rename": "altering table", "setup": "altering table", "renaming result table": "altering table",
	"preparing for alter table": "altering table", "copying to group table": "copying to tmp table",
	"copy to tmp table": "copying to tmp table", "query end": "end", "update": "updating",
	"updating main table": "updating", "updating reference tables": "updating",
	"system lock": "waiting for lock", "user lock": "waiting for lock", "table lock": "waiting for lock",
	"deleting from main table": "deleting", "deleting from reference tables": "deleting",
}

// threadState is the counted state of a thread's command and state, as Telegraf finds it.
func threadState(rawCommand, rawState string) string {
	command := strings.ReplaceAll(strings.ToLower(rawCommand), "_", " ")
	state := strings.ReplaceAll(strings.ToLower(rawState), "_", " ")
	if knownState[state] {
		return state
	}
	if s, ok := stateMappings[state]; ok {
		return s
	}
	switch {
	case strings.Contains(state, "waiting for") && strings.Contains(state, "lock"):
		return "waiting for lock"
	case command == "sleep" && state == "":
		return "idle"
	case command == "query":
		return "executing"
	case command == "binlog dump":
		return "replication master"
	}
	return "other"
}
