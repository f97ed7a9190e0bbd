package main

// The node's components, linked into this binary as subcommands so that the Kubernetes
// packages they share with the API server compile once (as hyperkube did):
//
//	devcluster kubelet [kubelet flags...]
//	devcluster kube-proxy [kube-proxy flags...]
//
// devcluster --world --real-node starts them as child processes (node.go); each runs as its
// upstream main package would, with its own flags, logs and signal handling.

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	kubeproxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// runComponent runs the component named by os.Args[1], if it is one, and reports whether it was.
func runComponent() (int, bool) {
	if len(os.Args) < 2 {
		return 0, false
	}
	switch os.Args[1] {
	case "kubelet":
		cmd := kubelet.NewKubeletCommand(context.Background())
		cmd.SetArgs(os.Args[2:])
		return cli.Run(cmd), true
	case "kube-proxy":
		cmd := kubeproxy.NewProxyCommand()
		cmd.SetArgs(os.Args[2:])
		return cli.Run(cmd), true
	}
	return 0, false
}
