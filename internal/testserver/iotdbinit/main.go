// Command iotdbinit is PID 1 of the IoTDB test image (testdata/containers/iotdb): the image
// is built FROM scratch and has no shell, so this starts IoTDB's two nodes, a ConfigNode and
// a DataNode, each a JVM of its own, as IoTDB's start scripts would. It passes SIGTERM and
// SIGINT on to both, and exits when either node exits, after stopping the other, so that
// a node that dies takes the container with it and the test sees it.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// opens are the JDK modules IoTDB reaches into, as its iotdb-common.sh opens them.
var opens = []string{
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
}

const home = "/iotdb"

// node is the java command line of one node: its heap, the home, configuration and log
// properties its main class reads (prefix CONFIGNODE or IOTDB), and the class.
func node(heap, prefix, name, class string) *exec.Cmd {
	args := append([]string{}, opens...)
	args = append(args,
		"-Xms"+heap, "-Xmx"+heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=/tmp",
		"-Dlogback.configurationFile="+home+"/conf/logback.xml",
		"-D"+prefix+"_HOME="+home, "-D"+prefix+"_DATA_HOME="+home, "-D"+prefix+"_CONF="+home+"/conf",
		"-D"+prefix+"_LOGS="+home+"/logs", "-DTSFILE_HOME="+home, "-DTSFILE_CONF="+home+"/conf",
		"-Dname="+name, "-cp", home+"/lib/*", class, "-s")
	cmd := exec.Command("/jdk/bin/java", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd
}

func main() {
	if err := os.MkdirAll("/tmp", 0o1777); err != nil {
		fmt.Fprintln(os.Stderr, "iotdbinit:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	nodes := []*exec.Cmd{
		node(envOr("IOTDB_CN_HEAP", "256m"), "CONFIGNODE", "iotdb.ConfigNode", "org.apache.iotdb.confignode.service.ConfigNode"),
		node(envOr("IOTDB_DN_HEAP", "512m"), "IOTDB", "iotdb.IoTDB", "org.apache.iotdb.db.service.DataNode"),
	}
	exited := make(chan error, len(nodes))
	for _, n := range nodes {
		if err := n.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "iotdbinit:", err)
			stop(nodes, syscall.SIGKILL)
			os.Exit(1)
		}
		go func() { exited <- n.Wait() }()
	}
	code := 0
	select {
	case s := <-sigs:
		stop(nodes, s.(syscall.Signal))
	case err := <-exited:
		fmt.Fprintln(os.Stderr, "iotdbinit: a node exited:", err)
		code = 1
		stop(nodes, syscall.SIGTERM)
	}
	for range len(nodes) - code { // the node that exited on its own has been waited for
		<-exited
	}
	os.Exit(code)
}

// stop sends sig to every node still running.
func stop(nodes []*exec.Cmd, sig syscall.Signal) {
	for _, n := range nodes {
		if n.Process != nil {
			_ = n.Process.Signal(sig)
		}
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
