package main

// The world: what makes a devcluster's workloads move. kube-controller-manager and
// kube-scheduler run in this process, built from the same Kubernetes modules as the API
// server; kwok runs beside it as a child process and plays the kubelets of simulated nodes.
// Each authenticates as the identity a real cluster gives it, so the bootstrap RBAC roles
// apply to them unchanged:
//
//	kube-controller-manager  system:kube-controller-manager, and with
//	                         --use-service-account-credentials one ServiceAccount per
//	                         controller in kube-system (system:serviceaccount:kube-system:...)
//	kube-scheduler           system:kube-scheduler
//	kwok                     devcluster:kwok, bound to a ClusterRole with what a kubelet
//	                         needs for pods and nodes (the rules kwok's own manifests grant)

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/featuregate"
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// stagesYAML is kwok's configuration: the stages that move simulated nodes and pods,
// including the fault stages selected by the minds.dev/fault label (docs/world.md).
//
//go:embed kwok-stages.yaml
var stagesYAML []byte

// controllers are the only controllers kube-controller-manager runs: what Deployments,
// ReplicaSets, Pods, namespaces and cascading deletion need, and node lifecycle, which lifts
// the not-ready taint the API server puts on every new node once the node reports Ready.
// Every other controller (cloud, node IPAM, taint eviction, volumes, jobs, certificates...)
// stays off to keep idle CPU low.
var controllers = []string{
	"node-lifecycle-controller",
	"deployment-controller",
	"replicaset-controller",
	"serviceaccount-controller",
	"root-ca-certificate-publisher-controller",
	"namespace-controller",
	"garbage-collector-controller",
}

// realNodeControllers run too when there is a real node: a Helm hook is a Job, and a Service
// reaches a Pod that really runs through the EndpointSlices kube-proxy reads.
var realNodeControllers = []string{"job-controller", "endpointslice-controller"}

func worldControllers(realNode bool) []string {
	if !realNode {
		return controllers
	}
	return append(append([]string{}, controllers...), realNodeControllers...)
}

const (
	// fakeNodeAnnotation marks the nodes kwok manages (and kwok manages only those).
	fakeNodeAnnotation = "kwok.x-k8s.io/node"
	kwokUser           = "devcluster:kwok"
	// worldReadyWithin bounds the wait for nodes to be Ready and controllers to be running.
	worldReadyWithin = 90 * time.Second
)

// componentUsers are the identities of the world's components (static tokens, like users).
var componentUsers = []user{
	{name: "system:kube-controller-manager"},
	{name: "system:kube-scheduler"},
	{name: kwokUser},
}

type worldConfig struct {
	dir        string // DIR/world: component kubeconfigs, serving certificates, kwok's stages
	server     string
	caPEM      string
	caFile     string
	tokens     tokenFile
	kwokBinary string
	nodes      int
	realNode   bool // also the controllers that Pods which really run need (realNodeControllers)
}

// world is the running set of components; stop ends them all.
type world struct {
	cancel   context.CancelFunc
	done     []<-chan error
	kwokDone <-chan error
	kwok     *os.Process
}

// prepareWorldFeatures makes the one process-wide setting kube-controller-manager makes for
// itself: client-go's WatchListClient on (options.go, Flags). It must happen before
// kube-apiserver adds the feature gates to its flag set, after which defaults are frozen and
// the controller manager's own attempt panics. The API server's clients then stream their
// initial lists too, which its WatchList feature (on by default in 1.34) serves.
func prepareWorldFeatures() error {
	gate := featuregate.Feature(clientgofeatures.WatchListClient)
	if utilfeature.DefaultFeatureGate.Enabled(gate) {
		return nil
	}
	return utilfeature.DefaultMutableFeatureGate.OverrideDefaultAtVersion(gate, true, version.MustParse("1.34"))
}

// startWorld starts the components against a ready API server and waits until the simulated
// nodes are Ready and the controllers have reconciled the default namespace.
func startWorld(ctx context.Context, cfg worldConfig) (*world, error) {
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return nil, err
	}
	admin, err := kubernetes.NewForConfig(restConfig(cfg.server, cfg.caPEM, cfg.tokens.byUser["admin"]))
	if err != nil {
		return nil, err
	}
	if err := ensureKwokRBAC(ctx, admin); err != nil {
		return nil, fmt.Errorf("kwok RBAC: %w", err)
	}
	if err := ensureNodes(ctx, admin, cfg.nodes); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}

	kubeconfigs := map[string]string{}
	for _, u := range componentUsers {
		path := filepath.Join(cfg.dir, sanitize(u.name)+".kubeconfig")
		if err := writeComponentKubeconfig(path, cfg.server, cfg.caPEM, u.name, cfg.tokens.byUser[u.name]); err != nil {
			return nil, err
		}
		kubeconfigs[u.name] = path
	}

	wctx, cancel := context.WithCancel(ctx)
	w := &world{cancel: cancel}
	cmDone, err := startControllerManager(wctx, cfg, kubeconfigs["system:kube-controller-manager"])
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	w.done = append(w.done, cmDone)
	schedDone, err := startScheduler(wctx, cfg, kubeconfigs["system:kube-scheduler"])
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("kube-scheduler: %w", err)
	}
	w.done = append(w.done, schedDone)
	stages := filepath.Join(cfg.dir, "kwok.yaml")
	if err := writeFileAtomic(stages, stagesYAML, 0o600); err != nil {
		w.stop()
		return nil, err
	}
	proc, kwokDone, err := startKwok(cfg.kwokBinary, kubeconfigs[kwokUser], stages)
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("kwok: %w", err)
	}
	w.kwok, w.kwokDone = proc, kwokDone

	readyCtx, readyCancel := context.WithTimeout(ctx, worldReadyWithin)
	defer readyCancel()
	if err := waitWorldReady(readyCtx, admin, cfg.nodes, w); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// stop ends kwok and the in-process components; safe on a partly started world.
func (w *world) stop() {
	if w.kwok != nil {
		_ = w.kwok.Signal(syscall.SIGTERM)
		select {
		case <-w.kwokDone:
		case <-time.After(5 * time.Second):
			_ = w.kwok.Kill()
		}
	}
	w.cancel()
	for _, done := range w.done {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
}

func restConfig(server, caPEM, token string) *rest.Config {
	return &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(caPEM)},
	}
}

// sanitize makes a user name a file name.
func sanitize(name string) string { return strings.ReplaceAll(name, ":", "-") }

func writeComponentKubeconfig(path, server, caPEM, name, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte(caPEM)}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: name}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}

// loopbackListener binds a free port on 127.0.0.1 and keeps it, so no other process can take
// the port between choosing and serving.
func loopbackListener() (net.Listener, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

// commonFlags are the flags both components take alike: their identity, delegated
// authentication and authorisation of their own HTTPS endpoint, no leader election (there is
// only one of each), and a serving certificate kept under DIR/world.
func commonFlags(kubeconfig, certDir, caFile string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--cert-dir=" + certDir,
		"--profiling=false",
		// Client certificates are checked against the cluster CA; the front proxy's
		// request-header CA, which the API server does not use, is not looked up.
		"--client-ca-file=" + caFile,
		"--authentication-skip-lookup=true",
	}
}

func startControllerManager(ctx context.Context, cfg worldConfig, kubeconfig string) (<-chan error, error) {
	opts, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	all, disabled, aliases := kcm.KnownControllers(), kcm.ControllersDisabledByDefault(), kcm.ControllerAliases()
	named := opts.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	args := append(commonFlags(kubeconfig, filepath.Join(cfg.dir, "kube-controller-manager"), cfg.caFile),
		"--use-service-account-credentials=true",
		"--root-ca-file="+cfg.caFile,
		"--controllers="+strings.Join(worldControllers(cfg.realNode), ","),
	)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	opts.ParsedFlags = &named
	if opts.SecureServing.Listener, opts.SecureServing.BindPort, err = loopbackListener(); err != nil {
		return nil, err
	}
	c, err := opts.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- kcm.Run(ctx, c.Complete()) }()
	return done, nil
}

func startScheduler(ctx context.Context, cfg worldConfig, kubeconfig string) (<-chan error, error) {
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(commonFlags(kubeconfig, filepath.Join(cfg.dir, "kube-scheduler"), cfg.caFile)); err != nil {
		return nil, err
	}
	var err error
	if opts.SecureServing.Listener, opts.SecureServing.BindPort, err = loopbackListener(); err != nil {
		return nil, err
	}
	cc, sched, err := scheduler.Setup(ctx, opts)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- scheduler.Run(ctx, cc, sched) }()
	return done, nil
}

// startKwok starts kwok as a child that dies with this process, even on SIGKILL: the
// parent-death signal is tied to the OS thread that forked the child, so that thread stays
// locked to its goroutine, which waits for the child, for the child's whole life.
func startKwok(binary, kubeconfig, stages string) (*os.Process, <-chan error, error) {
	if _, err := exec.LookPath(binary); err != nil {
		return nil, nil, fmt.Errorf("%s not found (tests/cluster/build.sh builds it beside devcluster): %w", binary, err)
	}
	started := make(chan error, 1)
	done := make(chan error, 1)
	var proc *os.Process
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(binary,
			"--kubeconfig="+kubeconfig,
			"--config="+stages,
			"--manage-nodes-with-annotation-selector="+fakeNodeAnnotation+"=fake",
			"--node-lease-duration-seconds=40",
			// Pod IPs from a range of their own, apart from serviceCIDR.
			"--cidr=10.244.0.1/16",
			"--v=WARN",
		)
		cmd.Stdout = os.Stderr
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		proc = cmd.Process
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, nil, err
	}
	return proc, done, nil
}

func ensureKwokRBAC(ctx context.Context, c kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: kwokUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwokUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kwokUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kwokUser}},
	}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := c.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// nodeName is the name of simulated node i.
func nodeName(i int) string { return "kwok-node-" + strconv.Itoa(i) }

// ensureNodes registers the simulated nodes, as kubelets register themselves; kwok then
// fills their status and keeps their leases fresh.
func ensureNodes(ctx context.Context, c kubernetes.Interface, n int) error {
	for i := range n {
		name := nodeName(i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{fakeNodeAnnotation: "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     runtime.GOARCH,
			},
		}}
		if _, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// waitWorldReady waits until every simulated node is Ready and untainted (kwok and the node
// lifecycle controller run), so Pods can be scheduled, and the default
// namespace has its ServiceAccount (the controllers run), failing early if a component exits.
func waitWorldReady(ctx context.Context, c kubernetes.Interface, nodes int, w *world) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var waitingFor string
	for {
		waitingFor = worldPending(ctx, c, nodes)
		if waitingFor == "" {
			return nil
		}
		for _, done := range w.done {
			select {
			case err := <-done:
				return fmt.Errorf("a control-plane component exited while starting: %v", err)
			default:
			}
		}
		select {
		case err := <-w.kwokDone:
			return fmt.Errorf("kwok exited while starting: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("the world was not ready within %s: waiting for %s", worldReadyWithin, waitingFor)
		case <-tick.C:
		}
	}
}

// worldPending names what is not ready yet, or returns "".
func worldPending(ctx context.Context, c kubernetes.Interface, nodes int) string {
	for i := range nodes {
		node, err := c.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
		if err != nil || !nodeReady(node) {
			return "node " + nodeName(i) + " to be Ready"
		}
		if len(node.Spec.Taints) > 0 {
			return "node " + nodeName(i) + " to lose its taints"
		}
	}
	if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return "the default ServiceAccount"
	}
	return ""
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
