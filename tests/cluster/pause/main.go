// Command pause is the sandbox ("pause") container of the devcluster's real node: it holds a
// Pod's namespaces, reaps the zombies it inherits and exits on SIGINT or SIGTERM, as
// kubernetes/build/pause does. The devcluster cannot pull registry.k8s.io/pause, so it builds
// this program (static, CGO_ENABLED=0) and imports it as an image into the node's containerd.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if os.Getpid() != 1 {
		os.Stderr.WriteString("warning: pause should be the first process\n")
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
