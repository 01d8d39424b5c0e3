// Command idlebox is the one process of the containers that the tests of inputs.docker
// start (testserver.StartBox): built static, it is the whole of an image FROM scratch.
//
//	idlebox             waits for SIGTERM or SIGINT, then exits 0; with IDLEBOX_SPIN=1 it
//	                    keeps one CPU a little busy meanwhile, so that CPU usage shows
//	idlebox exit N      exits at once with status N
//	idlebox health      the health check: exits 0 when IDLEBOX_HEALTH is "ok", 1 otherwise
package main

import (
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "exit":
			n, _ := strconv.Atoi(os.Args[2])
			os.Exit(n)
		case "health":
			if os.Getenv("IDLEBOX_HEALTH") == "ok" {
				os.Exit(0)
			}
			os.Exit(1)
		}
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	if os.Getenv("IDLEBOX_SPIN") == "1" {
		go spin()
	}
	<-stop
}

// spin works for a millisecond out of every ten.
func spin() {
	x := 0
	for {
		end := time.Now().Add(time.Millisecond)
		for time.Now().Before(end) {
			x++
		}
		time.Sleep(9 * time.Millisecond)
	}
}
