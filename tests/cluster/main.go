// Command devcluster runs a throwaway Kubernetes control plane for development and tests:
// an embedded etcd and an in-process kube-apiserver, both on 127.0.0.1, and with --world the
// components that make workloads move (world.go): kube-controller-manager and kube-scheduler
// in this process, and kwok beside it simulating the kubelets of --nodes nodes.
//
// There is no container engine where minds-operator is built and tested, and release binaries
// cannot be downloaded, so the control plane is compiled from the Kubernetes Go modules instead
// (much as envtest does with release binaries). Without --world nothing reconciles: objects are
// stored, validated, admitted and authorised exactly as in a real cluster, and stay as written,
// which tests that set a workload's status themselves rely on.
//
// Contract:
//
//	devcluster --dir DIR [--port N] [--stop-on-stdin-close] [--world [--nodes N] [--kwok PATH]]
//	           [-- extra kube-apiserver flags...]
//
// DIR holds the etcd data (kept across restarts), the PKI (kept), a token file (new random
// tokens on every start) and DIR/kubeconfig (rewritten on every start) with one context per
// user: admin (system:masters), approver (minds:approvers), viewer (minds:viewers) and
// intruder (no groups). When /readyz answers ok (and, with --world, the simulated nodes are
// Ready and the controllers run) it prints exactly one line to stdout,
//
//	READY kubeconfig=<abs path> server=https://127.0.0.1:<port>
//
// and closes stdout. All logs go to stderr. SIGTERM or SIGINT stop the API server and etcd and
// exit 0; a second signal exits at once with status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/grpclog"
	"k8s.io/component-base/cli"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	// The same registrations the real kube-apiserver main package performs.
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
)

const (
	// serviceCIDR is the range Service ClusterIPs come from; its first address is the
	// in-cluster "kubernetes" Service and is therefore also in the serving certificate.
	serviceCIDR = "10.0.0.0/24"
	// issuer is the ServiceAccount token issuer and, unless overridden, the API audience.
	issuer = "https://kubernetes.default.svc"
	// forcedExitAfter bounds how long a clean shutdown may take before we give up on it.
	forcedExitAfter = 20 * time.Second
)

func main() {
	if code, ok := runComponent(); ok {
		os.Exit(code)
	}
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("devcluster", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory: etcd data, PKI, tokens, kubeconfig (created if missing)")
	port := fs.Int("port", 0, "kube-apiserver secure port on 127.0.0.1 (0 = pick a free port)")
	stdinStop := fs.Bool("stop-on-stdin-close", false,
		"stop as on SIGTERM when stdin reaches end of file (a launcher that dies, even by SIGKILL, closes it)")
	withWorld := fs.Bool("world", false,
		"also run kube-controller-manager, kube-scheduler and kwok, so workloads roll out, run and break")
	nodes := fs.Int("nodes", 2, "with --world: how many simulated nodes kwok runs")
	kwok := fs.String("kwok", "", "with --world: the kwok binary (default: kwok beside this binary)")
	realNode := fs.Bool("real-node", false,
		"with --world: also run one real node (containerd, kubelet, kube-proxy) whose Pods run; needs root (docs/world.md)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: devcluster --dir DIR [--port N] [--stop-on-stdin-close] "+
			"[--world [--nodes N] [--kwok PATH]] [-- kube-apiserver flags...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *realNode && !*withWorld {
		fmt.Fprintln(os.Stderr, "devcluster: --real-node needs --world")
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "devcluster: --dir is required")
		fs.Usage()
		return 2
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintf(os.Stderr, "devcluster: invalid --port %d\n", *port)
		return 2
	}
	if *nodes < 1 || *nodes > 100 {
		fmt.Fprintf(os.Stderr, "devcluster: invalid --nodes %d (1 to 100)\n", *nodes)
		return 2
	}
	var world *worldOptions
	if *withWorld {
		world = &worldOptions{nodes: *nodes, kwokBinary: *kwok, realNode: *realNode}
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
			return 1
		}
		if world.kwokBinary == "" {
			world.kwokBinary = filepath.Join(filepath.Dir(self), "kwok")
		}
		world.pauseBinary = filepath.Join(filepath.Dir(self), "devcluster-pause")
		if *realNode {
			if err := checkRealNodeHost(); err != nil {
				fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
				return 1
			}
		}
		if err := prepareWorldFeatures(); err != nil {
			fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
			return 1
		}
	}

	// Keep stdout for the READY line only: whatever a library prints to stdout goes to stderr.
	readyOut, err := reserveStdout()
	if err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		return 1
	}

	// Catch signals before anything else, so a SIGTERM that arrives while etcd starts is not
	// lost. kube-apiserver installs its own handler for the same signals when its command is
	// created (it stops gracefully on the first and exits on the second); serve checks for
	// signals that came earlier, and bounds how long the whole shutdown may take.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	noteStopRequests()
	if *stdinStop {
		go stopOnStdinClose()
	}
	if err := serve(*dir, *port, world, fs.Args(), readyOut, sigs); err != nil {
		fmt.Fprintf(os.Stderr, "devcluster: %v\n", err)
		return 1
	}
	return 0
}

// reserveStdout duplicates the real stdout for our own use and points file descriptor 1 at
// stderr, so that stray prints from kube-apiserver or etcd can never be mistaken for (or
// interleave with) the READY line that launchers parse.
func reserveStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("dup stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		return nil, fmt.Errorf("redirect stdout to stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "ready-stdout"), nil
}

// stopRequested is set on the first SIGTERM/SIGINT. A signal that lands while kube-apiserver
// is still starting makes its post-start hooks fail, and it reports that with klog.Fatal, that
// is os.Exit(255). That is a requested stop, not a failure: exitOnFatal turns it into a clean
// one.
var stopRequested atomic.Bool

func noteStopRequests() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ch
		stopRequested.Store(true)
	}()
}

// runningEtcd is the embedded etcd once started, for exitOnFatal.
var runningEtcd atomic.Pointer[embed.Etcd]

// fatalOnce makes concurrent fatal calls wait for the first one, which never returns.
var fatalOnce sync.Once

func exitOnFatal(code int) {
	fatalOnce.Do(func() {
		if !stopRequested.Load() {
			os.Exit(code)
		}
		fmt.Fprintln(os.Stderr, "devcluster: kube-apiserver was stopped while starting")
		if e := runningEtcd.Load(); e != nil {
			done := make(chan struct{})
			go func() { closeEtcd(e); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
			}
		}
		os.Exit(0)
	})
}

// stopOnStdinClose turns the end of stdin into a SIGTERM to ourselves, so the ordinary
// graceful shutdown runs. A test session that launched us and then died without cleaning up
// would otherwise leave an orphaned control plane behind.
func stopOnStdinClose() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Fprintln(os.Stderr, "devcluster: stdin closed")
	_ = unix.Kill(os.Getpid(), unix.SIGTERM)
}

// worldOptions are the --world settings; nil means no world.
type worldOptions struct {
	nodes       int
	kwokBinary  string
	realNode    bool
	pauseBinary string
}

func serve(dir string, port int, worldOpts *worldOptions, extraArgs []string, readyOut *os.File, sigs <-chan os.Signal) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()

	hasNode := worldOpts != nil && worldOpts.realNode
	listen := net.ParseIP("127.0.0.1")
	var servingIPs []net.IP
	nodeDir := filepath.Join(dir, "node")
	if hasNode {
		// The API server listens on the pod network's gateway, where Pods reach it, and only there.
		listen = bridgeIP
		servingIPs = append(servingIPs, bridgeIP)
		release, err := prepareRealNodeNetwork(nodeDir)
		if err != nil {
			return fmt.Errorf("real node: %w", err)
		}
		defer release()
	}
	pki, err := ensurePKI(filepath.Join(dir, "pki"), servingIPs...)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if hasNode {
		if err := nodePKI(filepath.Join(nodeDir, "pki"), pki); err != nil {
			return fmt.Errorf("real node pki: %w", err)
		}
	}
	identities := users
	if worldOpts != nil {
		identities = append(append([]user{}, users...), componentUsers...)
	}
	if hasNode {
		identities = append(identities, user{name: kubeProxyUser})
	}
	tokens, err := writeTokens(filepath.Join(dir, "tokens.csv"), identities)
	if err != nil {
		return fmt.Errorf("tokens: %w", err)
	}

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	if port == 0 {
		port = ports[2]
	}
	server := "https://" + net.JoinHostPort(listen.String(), strconv.Itoa(port))

	etcd, err := startEtcd(filepath.Join(dir, "etcd"), ports[0], ports[1])
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	runningEtcd.Store(etcd)
	klog.OsExit = exitOnFatal
	etcdURL := etcd.Clients[0].Addr().String()
	quietGRPC()
	select {
	case <-etcd.Server.ReadyNotify():
	case err := <-etcd.Err():
		closeEtcd(etcd)
		return fmt.Errorf("etcd: %w", err)
	case <-sigs:
		closeEtcd(etcd)
		return nil
	case <-time.After(60 * time.Second):
		closeEtcd(etcd)
		return errors.New("etcd did not become ready within 60s")
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, pki.caPEM, tokens); err != nil {
		closeEtcd(etcd)
		return fmt.Errorf("kubeconfig: %w", err)
	}

	args := []string{
		"--etcd-servers=http://" + etcdURL,
		"--bind-address=" + listen.String(),
		"--advertise-address=" + listen.String(),
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=" + issuer,
		"--api-audiences=" + issuer,
		"--service-account-key-file=" + pki.saPub,
		"--service-account-signing-key-file=" + pki.saKey,
		"--token-auth-file=" + tokens.path,
		"--profiling=false",
		"--v=0",
	}
	// The "kubernetes" Service endpoints would be 127.0.0.1, which Endpoints validation refuses
	// (loopback), so the lease reconciler would log an error every 10s. Without a real node
	// nothing runs inside this cluster and the Service needs no endpoints; with one, the node
	// writes them (the API server's address on the bridge), because the lease reconciler,
	// when the API server stops, waits 20 s on a listener that has already closed.
	args = append(args, "--endpoint-reconciler-type=none")
	if hasNode {
		args = append(args, realNodeAPIServerArgs(filepath.Join(nodeDir, "pki"), pki.caCert)...)
	} else {
		args = append(args, "--authorization-mode=RBAC")
	}
	args = append(args, extraArgs...)

	// Creating the command installs kube-apiserver's signal handler; a signal that came before
	// it reached only us, so honour it here rather than start a server nobody will stop.
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(args)
	cmd.SetOut(os.Stderr)
	cmd.SetErr(os.Stderr)
	select {
	case <-sigs:
		closeEtcd(etcd)
		return nil
	default:
	}
	apiDone := make(chan int, 1)
	go func() { apiDone <- cli.Run(cmd) }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	go func() {
		if waitReady(ctx, server, pki.caPEM, tokens.byUser["admin"]) {
			close(ready)
		}
	}()

	var apiCode int
	var apiExited bool
	var running *world
	var node *realNode
	var worldErr error
	select {
	case <-ready:
		if worldOpts != nil {
			running, worldErr = startWorld(context.Background(), worldConfig{
				dir: filepath.Join(dir, "world"), server: server, caPEM: pki.caPEM, caFile: pki.caCert,
				tokens: tokens, kwokBinary: worldOpts.kwokBinary, nodes: worldOpts.nodes, realNode: hasNode,
			})
			if worldErr == nil && hasNode {
				node, worldErr = startRealNodeFor(server, port, pki, tokens, nodeDir, worldOpts.pauseBinary)
			}
			if worldErr != nil {
				// Stop the API server the ordinary way; the error is reported once it has.
				_ = unix.Kill(os.Getpid(), unix.SIGTERM)
				<-sigs
				break
			}
		}
		_, werr := fmt.Fprintf(readyOut, "READY kubeconfig=%s server=%s\n", kubeconfig, server)
		_ = readyOut.Sync()
		_ = readyOut.Close()
		if werr != nil {
			fmt.Fprintf(os.Stderr, "devcluster: writing READY line: %v\n", werr)
		}
		fmt.Fprintf(os.Stderr, "devcluster: ready, kubeconfig=%s server=%s\n", kubeconfig, server)
		select {
		case apiCode = <-apiDone:
			apiExited = true
		case <-sigs:
		}
	case apiCode = <-apiDone:
		apiExited = true
	case <-sigs:
	}
	cancel()
	if node != nil {
		node.stop()
	}
	if running != nil {
		running.stop()
	}

	if !apiExited {
		// A signal arrived: kube-apiserver saw it too and is shutting down. Wait for it, but
		// never forever, and let a second signal end things at once.
		fmt.Fprintln(os.Stderr, "devcluster: stopping")
		timer := time.NewTimer(forcedExitAfter)
		select {
		case apiCode = <-apiDone:
			timer.Stop()
		case <-timer.C:
			fmt.Fprintf(os.Stderr, "devcluster: kube-apiserver did not stop within %s\n", forcedExitAfter)
			os.Exit(1)
		case <-sigs:
			fmt.Fprintln(os.Stderr, "devcluster: second signal, exiting at once")
			os.Exit(1)
		}
		closeEtcd(etcd)
		if worldErr != nil {
			return worldErr
		}
		if apiCode != 0 {
			return fmt.Errorf("kube-apiserver exited with status %d", apiCode)
		}
		return nil
	}

	closeEtcd(etcd)
	return fmt.Errorf("kube-apiserver exited with status %d before it was ready", apiCode)
}

// lockDir takes an exclusive lock on DIR so that two instances never share one etcd data
// directory (bbolt would otherwise block forever on its own file lock, with no message).
func lockDir(dir string) (func(), error) {
	path := filepath.Join(dir, "devcluster.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		owner, _ := io.ReadAll(f)
		f.Close()
		return nil, fmt.Errorf("%s is in use by another devcluster (pid %s)", dir, string(owner))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return func() {
		_ = f.Truncate(0)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1. Holding all listeners
// until every port is known keeps the ports distinct; the short window between closing them
// and the servers binding is an accepted race for a development tool.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func startEtcd(dataDir string, clientPort, peerPort int) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "devcluster"
	cfg.Dir = dataDir
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(clientPort))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(peerPort))}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger())
	// A development cluster trades durability on power loss for speed: fsync on every write
	// makes tests crawl on slow disks. A clean shutdown still leaves consistent data.
	cfg.UnsafeNoFsync = true
	return embed.StartEtcd(cfg)
}

// etcdLevel is the level of etcd's own logger: errors only while serving, nothing while it
// closes (where it reports every closed listener as an error).
var etcdLevel = zap.NewAtomicLevelAt(zapcore.ErrorLevel)

func etcdLogger() *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), etcdLevel)
	return zap.New(core).Named("etcd")
}

func closeEtcd(e *embed.Etcd) {
	etcdLevel.SetLevel(zapcore.FatalLevel)
	e.Close()
}

// quietGRPC drops gRPC client warnings. kube-apiserver probes etcd with short-lived clients
// while it starts and each cancelled dial is logged as a warning, dozens of misleading lines
// per start. gRPC errors are still logged. It runs after all package init functions, so it
// replaces the klog bridge that k8s.io/apiserver/pkg/storage/etcd3 installs.
func quietGRPC() {
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
}
