package main

// The real node: with --world --real-node the devcluster runs one node whose Pods really run,
// beside kwok's simulated ones. Everything stays on this machine:
//
//	network     a bridge, devcluster0, with the gateway address 10.88.0.1/24; Pods get
//	            addresses of 10.88.0.0/24 from CNI (Debian's containernetworking-plugins:
//	            bridge, host-local, loopback) in network namespaces of their own, and a route
//	            to the pod network and the Service range only. The API server listens on the
//	            gateway address alone and advertises it; the host forwards between Pods of
//	            the bridge and nowhere else.
//	runtime     containerd (Debian) with runc, its own root, state and socket, and a pause
//	            image built from tests/cluster/pause (no registry is reached)
//	kubelet     `devcluster kubelet`, as system:node:devcluster-node (group system:nodes),
//	            under the Node authorizer and the NodeRestriction admission plugin; the node is
//	            tainted minds.dev/real-node=true:NoSchedule
//	kube-proxy  `devcluster kube-proxy` (iptables mode), so the "kubernetes" Service ClusterIP
//	            and every other Service reach their endpoints from a Pod
//
// It needs root (namespaces, mounts, cgroups, iptables). Only one real node runs on a machine.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	realNodeName  = "devcluster-node"
	bridgeName    = "devcluster0"
	podCIDR       = "10.88.0.0/24"
	realNodeTaint = "minds.dev/real-node"
	pauseImage    = "localhost/devcluster/pause:1"
	// nodeRunDir holds the sockets (whose paths must stay short) and the machine-wide lock.
	nodeRunDir = "/run/devcluster-node"
	// apiserverKubeletClient is who the API server is to the kubelet (exec, logs).
	apiserverKubeletClient = "devcluster:apiserver-kubelet-client"
	kubeProxyUser          = "system:kube-proxy"
	// realNodeReadyWithin bounds the wait for the real node to register and be Ready.
	realNodeReadyWithin = 120 * time.Second
)

// forwardWas is net.ipv4.ip_forward before the node set it, to restore when it stops.
var forwardWas atomic.Pointer[string]

// bridgeIP is the gateway of the pod network: the node's address and the API server's.
var bridgeIP = net.ParseIP("10.88.0.1")

// nodeConfig is what the real node needs from the devcluster.
type nodeConfig struct {
	dir    string // DIR/node
	server string
	pki    pkiFiles
	tokens tokenFile
	pause  string // the pause binary
}

type realNode struct {
	dir   string
	procs []*child // started order; stopped in reverse
}

type child struct {
	name string
	proc *os.Process
	done chan error
}

// nodeTools are the programs the real node runs from the machine (Debian packages).
var nodeTools = []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip"}

// cniPlugins are the CNI plugins it uses, from /usr/lib/cni (containernetworking-plugins).
const cniBinDir = "/usr/lib/cni"

var cniPlugins = []string{"bridge", "host-local", "loopback"}

// checkRealNodeHost fails early, with what is missing, when this machine cannot run the node.
func checkRealNodeHost() error {
	if os.Geteuid() != 0 {
		return errors.New("--real-node needs root (network namespaces, mounts, cgroups, iptables)")
	}
	var missing []string
	for _, t := range nodeTools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	for _, p := range cniPlugins {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, p))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--real-node needs %s (scripts/ensure-tools.sh --node installs them on Debian as root)",
			strings.Join(missing, ", "))
	}
	return nil
}

// prepareRealNodeNetwork takes the machine-wide lock and creates the bridge the API server
// then listens on. It runs before the API server starts.
func prepareRealNodeNetwork(nodeDir string) (func(), error) {
	if err := os.MkdirAll(nodeRunDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(nodeRunDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.New("another devcluster runs the real node on this machine")
	}
	release := func() {
		removeNodeNetwork()
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}
	// Leftovers of a run that was killed: its Pods' sandboxes and mounts, and the bridge.
	cleanNodeLeftovers("", nodeDir)
	removeNodeNetwork()
	steps := [][]string{
		{"ip", "link", "add", bridgeName, "type", "bridge"},
		{"ip", "addr", "add", bridgeIP.String() + "/24", "dev", bridgeName},
		{"ip", "link", "set", bridgeName, "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			release()
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return release, nil
}

func runTool(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nodePKI issues the kubelet's client certificate (its node identity), its serving
// certificate, and the API server's client certificate to kubelets, in DIR/node/pki.
func nodePKI(dir string, p pkiFiles) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := loadCA(p.caCert, p.caKey)
	if err != nil {
		return err
	}
	if err := issueCert(filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key"), ca, caKey,
		pkix.Name{CommonName: "system:node:" + realNodeName, Organization: []string{"system:nodes"}},
		x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return err
	}
	if err := issueCert(filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key"), ca, caKey,
		pkix.Name{CommonName: realNodeName}, x509.ExtKeyUsageServerAuth, []net.IP{bridgeIP}, []string{realNodeName}); err != nil {
		return err
	}
	return issueCert(filepath.Join(dir, "apiserver-kubelet-client.crt"), filepath.Join(dir, "apiserver-kubelet-client.key"), ca, caKey,
		pkix.Name{CommonName: apiserverKubeletClient}, x509.ExtKeyUsageClientAuth, nil, nil)
}

// realNodeAPIServerArgs are the API server flags the real node needs.
func realNodeAPIServerArgs(pkiDir, caFile string) []string {
	return []string{
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + filepath.Join(pkiDir, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + filepath.Join(pkiDir, "apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + caFile,
		"--kubelet-preferred-address-types=InternalIP",
	}
}

func startRealNode(ctx context.Context, cfg nodeConfig, admin kubernetes.Interface) (*realNode, error) {
	n := &realNode{dir: cfg.dir}
	dirs := map[string]string{}
	for _, d := range []string{"containerd", "kubelet", "cni", "cni-ipam", "logs", "pki"} {
		dirs[d] = filepath.Join(cfg.dir, d)
		if err := os.MkdirAll(dirs[d], 0o700); err != nil {
			return nil, err
		}
	}
	// host-local's leases of a previous run name sandboxes that no longer exist.
	_ = os.RemoveAll(dirs["cni-ipam"])
	if err := os.MkdirAll(dirs["cni-ipam"], 0o700); err != nil {
		return nil, err
	}
	if err := ensureNodeRBAC(ctx, admin); err != nil {
		return nil, fmt.Errorf("node RBAC: %w", err)
	}
	if err := forwardOnlyOnBridge(); err != nil {
		return nil, err
	}

	sock := filepath.Join(nodeRunDir, "containerd.sock")
	if err := writeFileAtomic(filepath.Join(dirs["cni"], "10-devcluster.conflist"), cniConfig(dirs["cni-ipam"]), 0o600); err != nil {
		return nil, err
	}
	ctrdConf := filepath.Join(cfg.dir, "containerd.toml")
	if err := writeFileAtomic(ctrdConf, containerdConfig(dirs["containerd"], sock, dirs["cni"]), 0o600); err != nil {
		return nil, err
	}
	c, err := startChild("containerd", filepath.Join(dirs["logs"], "containerd.log"), "containerd", "--config", ctrdConf)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, c)
	if err := waitFor(ctx, 30*time.Second, "containerd's socket", c, func() bool {
		return exec.Command("ctr", "--address", sock, "version").Run() == nil
	}); err != nil {
		n.stop()
		return nil, err
	}
	archive := filepath.Join(cfg.dir, "pause.tar")
	if err := writePauseImage(archive, cfg.pause); err != nil {
		n.stop()
		return nil, fmt.Errorf("pause image: %w", err)
	}
	if err := runTool("ctr", "--address", sock, "-n", "k8s.io", "images", "import", archive); err != nil {
		n.stop()
		return nil, err
	}

	kubeconfig := filepath.Join(cfg.dir, "kubelet.kubeconfig")
	if err := writeCertKubeconfig(kubeconfig, cfg.server, cfg.pki.caPEM, "system:node:"+realNodeName,
		filepath.Join(dirs["pki"], "kubelet-client.crt"), filepath.Join(dirs["pki"], "kubelet-client.key")); err != nil {
		n.stop()
		return nil, err
	}
	kubeletConf := filepath.Join(cfg.dir, "kubelet.yaml")
	if err := writeFileAtomic(kubeletConf, kubeletConfig(dirs["pki"], cfg.pki.caCert, sock), 0o600); err != nil {
		n.stop()
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		n.stop()
		return nil, err
	}
	k, err := startChild("kubelet", filepath.Join(dirs["logs"], "kubelet.log"), self, "kubelet",
		"--config="+kubeletConf,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+dirs["kubelet"],
		"--cert-dir="+dirs["pki"],
		"--hostname-override="+realNodeName,
		"--node-ip="+bridgeIP.String(),
		"--node-labels=minds.dev/real-node=true",
		"--v=1",
	)
	if err != nil {
		n.stop()
		return nil, err
	}
	n.procs = append(n.procs, k)
	kubeletStarted := time.Now().Truncate(time.Second)

	proxyKubeconfig := filepath.Join(cfg.dir, "kube-proxy.kubeconfig")
	if err := writeComponentKubeconfig(proxyKubeconfig, cfg.server, cfg.pki.caPEM, kubeProxyUser, cfg.tokens.byUser[kubeProxyUser]); err != nil {
		n.stop()
		return nil, err
	}
	proxyConf := filepath.Join(cfg.dir, "kube-proxy.yaml")
	proxyPorts, err := freePorts(2)
	if err != nil {
		n.stop()
		return nil, err
	}
	if err := writeFileAtomic(proxyConf, kubeProxyConfig(proxyKubeconfig, proxyPorts), 0o600); err != nil {
		n.stop()
		return nil, err
	}
	p, err := startChild("kube-proxy", filepath.Join(dirs["logs"], "kube-proxy.log"), self, "kube-proxy",
		"--config="+proxyConf, "--v=1")
	if err != nil {
		n.stop()
		return nil, err
	}
	n.procs = append(n.procs, p)

	if err := waitFor(ctx, realNodeReadyWithin, "node "+realNodeName+" to be Ready", nil, func() bool {
		for _, c := range n.procs {
			select {
			case err := <-c.done:
				c.done <- err
				return true // reported below
			default:
			}
		}
		node, err := admin.CoreV1().Nodes().Get(ctx, realNodeName, metav1.GetOptions{})
		// Ready as this kubelet reports it, not as a previous run left the Node in etcd.
		return err == nil && nodeReady(node) && readySince(node, kubeletStarted) &&
			!hasTaint(node, "node.kubernetes.io/not-ready")
	}); err != nil {
		n.stop()
		return nil, err
	}
	for _, c := range n.procs {
		select {
		case err := <-c.done:
			n.stop()
			return nil, fmt.Errorf("%s exited while the node started: %v (log: %s)", c.name, err,
				filepath.Join(dirs["logs"], c.name+".log"))
		default:
		}
	}
	return n, nil
}

func readySince(node *corev1.Node, t time.Time) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return !c.LastHeartbeatTime.Time.Before(t)
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// waitFor polls ok until it holds, ctx ends, within passes or c exits.
func waitFor(ctx context.Context, within time.Duration, what string, c *child, ok func() bool) error {
	deadline := time.Now().Add(within)
	for {
		if ok() {
			return nil
		}
		if c != nil {
			select {
			case err := <-c.done:
				c.done <- err
				return fmt.Errorf("%s exited while waiting for %s: %v", c.name, what, err)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", within, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startChild starts a component that dies with this process (see startKwok), logging to log.
func startChild(name, log, binary string, args ...string) (*child, error) {
	out, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "devcluster: starting %s (log: %s)\n", name, log)
	started := make(chan error, 1)
	c := &child{name: name, done: make(chan error, 1)}
	go func() {
		runtime.LockOSThread()
		defer out.Close()
		cmd := exec.Command(binary, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.proc = cmd.Process
		started <- nil
		c.done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// stop ends the node's components and everything they started: Pods' containers, their
// mounts and network namespaces, kube-proxy's rules and the bridge.
func (n *realNode) stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		c := n.procs[i]
		if c.name == "containerd" {
			cleanNodeLeftovers(filepath.Join(nodeRunDir, "containerd.sock"), n.dir)
		}
		_ = c.proc.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = c.proc.Kill()
		}
	}
	n.procs = nil
	if self, err := os.Executable(); err == nil {
		_ = exec.Command(self, "kube-proxy", "--cleanup").Run()
	}
	cleanNodeLeftovers("", n.dir)
}

// cleanNodeLeftovers removes what Pods leave behind. With a containerd socket it stops and
// removes their containers first, then their network namespaces; without, only what
// outlives containerd: its shims (which hold the containers), mounts and network namespaces.
func cleanNodeLeftovers(sock, nodeDir string) {
	if sock != "" {
		ctr := func(args ...string) string {
			out, _ := exec.Command("ctr", append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).Output()
			return string(out)
		}
		for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
			ctr("tasks", "kill", "-s", "SIGKILL", id)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.TrimSpace(ctr("tasks", "ls", "-q")) != "" && time.Now().Before(deadline) {
			for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
				ctr("tasks", "delete", "-f", id)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, id := range strings.Fields(ctr("containers", "ls", "-q")) {
			ctr("containers", "delete", id)
		}
		return
	}
	// Shims of this node's containerd run with its socket path in their arguments.
	if procs, err := filepath.Glob("/proc/[0-9]*/cmdline"); err == nil {
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(b, []byte("containerd-shim")) || !bytes.Contains(b, []byte(nodeRunDir)) {
				continue
			}
			var pid int
			if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid); err == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
	unmountUnder(nodeRunDir)
	if nodeDir != "" {
		unmountUnder(nodeDir)
	}
	// The network namespaces the CRI made for Pods (containerd names them cni-...).
	if nss, err := filepath.Glob("/run/netns/cni-*"); err == nil {
		for _, ns := range nss {
			_ = unix.Unmount(ns, unix.MNT_DETACH)
			_ = os.Remove(ns)
		}
	}
}

// removeNodeNetwork removes the forward rules and the bridge. It runs once the API server has
// stopped: a connection to its address on the bridge would otherwise outlive the address,
// and the API server would wait for it to close.
func removeNodeNetwork() {
	_ = exec.Command("iptables", "-D", "FORWARD", "-j", "DEVCLUSTER-FORWARD").Run()
	_ = exec.Command("iptables", "-F", "DEVCLUSTER-FORWARD").Run()
	_ = exec.Command("iptables", "-X", "DEVCLUSTER-FORWARD").Run()
	_ = exec.Command("ip", "link", "del", bridgeName).Run()
	// The kubelet's own chains (kube-proxy --cleanup removes kube-proxy's).
	for _, tool := range []string{"iptables", "ip6tables"} {
		for _, args := range [][]string{
			{"-D", "INPUT", "-j", "KUBE-FIREWALL"}, {"-D", "OUTPUT", "-j", "KUBE-FIREWALL"},
			{"-F", "KUBE-FIREWALL"}, {"-X", "KUBE-FIREWALL"},
			{"-F", "KUBE-KUBELET-CANARY"}, {"-X", "KUBE-KUBELET-CANARY"},
			{"-t", "nat", "-F", "KUBE-KUBELET-CANARY"}, {"-t", "nat", "-X", "KUBE-KUBELET-CANARY"},
			{"-t", "mangle", "-F", "KUBE-KUBELET-CANARY"}, {"-t", "mangle", "-X", "KUBE-KUBELET-CANARY"},
		} {
			_ = exec.Command(tool, args...).Run()
		}
	}
	if was := forwardWas.Load(); was != nil {
		_ = os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(*was), 0o644)
	}
}

// forwardOnlyOnBridge lets the host route between Pods of the bridge (a Pod reaching another
// through a Service) and nowhere else: nothing enters or leaves the pod network through
// another interface.
func forwardOnlyOnBridge() error {
	was, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	rules := [][]string{
		{"-N", "DEVCLUSTER-FORWARD"},
		{"-A", "DEVCLUSTER-FORWARD", "-i", bridgeName, "-o", bridgeName, "-j", "ACCEPT"},
		{"-A", "DEVCLUSTER-FORWARD", "-i", bridgeName, "-j", "REJECT"},
		{"-A", "DEVCLUSTER-FORWARD", "-o", bridgeName, "-j", "REJECT"},
		{"-I", "FORWARD", "1", "-j", "DEVCLUSTER-FORWARD"},
	}
	for _, r := range rules {
		if err := runTool("iptables", r...); err != nil {
			return err
		}
	}
	// Bridged traffic passes iptables, so a reply from a Pod behind a Service is un-NATed.
	if err := os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1"), 0o644); err != nil {
		return err
	}
	if strings.TrimSpace(string(was)) != "1" {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
			return err
		}
		w := string(was)
		forwardWas.Store(&w)
	}
	return nil
}

func ensureNodeRBAC(ctx context.Context, c kubernetes.Interface) error {
	bindings := []*rbacv1.ClusterRoleBinding{
		{
			// The API server, when it calls a kubelet (exec, logs, port-forward).
			ObjectMeta: metav1.ObjectMeta{Name: apiserverKubeletClient},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiserverKubeletClient}},
		},
	}
	// system:node-proxier is bound to system:kube-proxy by the bootstrap policy already.
	for _, b := range bindings {
		if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func writeCertKubeconfig(path, server, caPEM, name, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte(caPEM)}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: name}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}

func cniConfig(ipamDir string) []byte {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "devcluster",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": bridgeName, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": ipamDir,
					"ranges":  [][]map[string]string{{{"subnet": podCIDR, "gateway": bridgeIP.String()}}},
					// The pod network is on the link; the Service range is the only route.
					"routes": []map[string]string{{"dst": serviceCIDR}},
				},
			},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return b
}

func containerdConfig(root, sock, cniDir string) []byte {
	return []byte(fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # This machine's root may not lower an OOM score adjustment (no CAP_SYS_RESOURCE over
  # it): the sandbox's -998 would make runc fail, so scores stay at least containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(root, "root"), filepath.Join(nodeRunDir, "state"), sock, sock+".ttrpc", pauseImage, cniBinDir, cniDir))
}

func kubeletConfig(pkiDir, caFile, sock string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
failSwapOn: false
registerWithTaints:
- key: %s
  value: "true"
  effect: NoSchedule
resolvConf: /etc/resolv.conf
nodeStatusUpdateFrequency: 10s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 2%%
  imagefs.available: 2%%
`, bridgeIP, filepath.Join(pkiDir, "kubelet.crt"), filepath.Join(pkiDir, "kubelet.key"), caFile, sock, realNodeTaint))
}

func kubeProxyConfig(kubeconfig string, ports []int) []byte {
	return []byte(fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
nodePortAddresses: ["%s/32"]
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, realNodeName, podCIDR, bridgeIP, ports[0], ports[1]))
}

// writePauseImage writes an OCI image archive of one layer, /pause, named pauseImage, which
// `ctr images import` reads.
func writePauseImage(path, pause string) error {
	bin, err := os.ReadFile(pause)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diffID := sha256.Sum256(layer.Bytes())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(layer.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	blobs := map[string][]byte{}
	desc := func(mediaType string, b []byte) map[string]any {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return map[string]any{"mediaType": mediaType, "digest": d, "size": len(b)}
	}
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/pause"}, "User": "65535:65535"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        desc("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{desc("application/vnd.oci.image.layer.v1.tar+gzip", gz.Bytes())},
	})
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	md["annotations"] = map[string]string{"io.containerd.image.name": pauseImage, "org.opencontainers.image.ref.name": "1"}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{md}})

	var out bytes.Buffer
	aw := tar.NewWriter(&out)
	add := func(name string, b []byte) error {
		if err := aw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := aw.Write(b)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := add("index.json", index); err != nil {
		return err
	}
	for d, b := range blobs {
		if err := add("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b); err != nil {
			return err
		}
	}
	if err := aw.Close(); err != nil {
		return err
	}
	return writeFileAtomic(path, out.Bytes(), 0o600)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

func startRealNodeFor(server string, port int, pki pkiFiles, tokens tokenFile, dir, pause string) (*realNode, error) {
	admin, err := kubernetes.NewForConfig(restConfig(server, pki.caPEM, tokens.byUser["admin"]))
	if err != nil {
		return nil, err
	}
	if err := ensureKubernetesEndpoints(context.Background(), admin, port); err != nil {
		return nil, fmt.Errorf("kubernetes Service endpoints: %w", err)
	}
	start := time.Now()
	n, err := startRealNode(context.Background(), nodeConfig{dir: dir, server: server, pki: pki, tokens: tokens, pause: pause}, admin)
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	fmt.Fprintf(os.Stderr, "devcluster: node %s Ready in %.1fs\n", realNodeName, time.Since(start).Seconds())
	return n, nil
}

// ensureKubernetesEndpoints points the "kubernetes" Service at the API server on the bridge,
// as the API server's own endpoint reconciler would (see serve): an EndpointSlice, which
// kube-proxy reads, and the Endpoints beside it.
func ensureKubernetesEndpoints(ctx context.Context, c kubernetes.Interface, port int) error {
	name, proto, https := "https", corev1.ProtocolTCP, int32(port)
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   "devcluster",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{bridgeIP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &https}},
	}
	eps := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: bridgeIP.String()}},
			Ports:     []corev1.EndpointPort{{Name: name, Port: https, Protocol: proto}},
		}},
	}
	slices := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := slices.Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	endpoints := c.CoreV1().Endpoints(metav1.NamespaceDefault)
	if _, err := endpoints.Create(ctx, eps, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = endpoints.Update(ctx, eps, metav1.UpdateOptions{})
		return err
	} else if err != nil {
		return err
	}
	return nil
}
