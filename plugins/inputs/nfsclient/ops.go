package nfsclient

// nfs3Ops and nfs4Ops are the per-op statistics Telegraf collects by default for NFSv3 and
// NFSv4 mounts; include_operations replaces both lists, exclude_operations takes from them.
var nfs3Ops = []string{
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE", "CREATE", "MKDIR", "SYMLINK",
	"MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT",
}

var nfs4Ops = []string{
	"NULL", "READ", "WRITE", "COMMIT", "OPEN", "OPEN_CONFIRM", "OPEN_NOATTR", "OPEN_DOWNGRADE", "CLOSE", "SETATTR",
	"FSINFO", "RENEW", "SETCLIENTID", "SETCLIENTID_CONFIRM", "LOCK", "LOCKT", "LOCKU", "ACCESS", "GETATTR", "LOOKUP",
	"LOOKUP_ROOT", "REMOVE", "RENAME", "LINK", "SYMLINK", "CREATE", "PATHCONF", "STATFS", "READLINK", "READDIR",
	"SERVER_CAPS", "DELEGRETURN", "GETACL", "SETACL", "FS_LOCATIONS", "RELEASE_LOCKOWNER", "SECINFO", "FSID_PRESENT",
	"EXCHANGE_ID", "CREATE_SESSION", "DESTROY_SESSION", "SEQUENCE", "GET_LEASE_TIME", "RECLAIM_COMPLETE", "LAYOUTGET",
	"GETDEVICEINFO", "LAYOUTCOMMIT", "LAYOUTRETURN", "SECINFO_NO_NAME", "TEST_STATEID", "FREE_STATEID",
	"GETDEVICELIST", "BIND_CONN_TO_SESSION", "DESTROY_CLIENTID", "SEEK", "ALLOCATE", "DEALLOCATE", "LAYOUTSTATS",
	"CLONE", "COPY", "OFFLOAD_CANCEL", "LOOKUPP", "LAYOUTERROR", "COPY_NOTIFY", "GETXATTR", "SETXATTR", "LISTXATTRS",
	"REMOVEXATTR",
}

// The field names of the fullstat lines, in their column order.
var (
	eventsFields = []string{"inoderevalidates", "dentryrevalidates", "datainvalidates", "attrinvalidates", "vfsopen",
		"vfslookup", "vfsaccess", "vfsupdatepage", "vfsreadpage", "vfsreadpages", "vfswritepage", "vfswritepages",
		"vfsgetdents", "vfssetattr", "vfsflush", "vfsfsync", "vfslock", "vfsrelease", "congestionwait", "setattrtrunc",
		"extendwrite", "sillyrenames", "shortreads", "shortwrites", "delay", "pnfsreads", "pnfswrites"}
	bytesFields = []string{"normalreadbytes", "normalwritebytes", "directreadbytes", "directwritebytes",
		"serverreadbytes", "serverwritebytes", "readpages", "writepages"}
	xprtUDPFields = []string{"bind_count", "rpcsends", "rpcreceives", "badxids", "inflightsends", "backlogutil"}
	xprtTCPFields = []string{"bind_count", "connect_count", "connect_time", "idle_time", "rpcsends", "rpcreceives",
		"badxids", "inflightsends", "backlogutil"}
	opFields = []string{"ops", "trans", "timeouts", "bytes_sent", "bytes_recv", "queue_time", "response_time",
		"total_time", "errors"}
)
