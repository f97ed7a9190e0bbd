package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// user is one static-token identity. The groups are what RBAC sees; tests bind roles to them.
type user struct {
	name   string
	groups []string
}

// users are the identities every devcluster offers. admin can do anything; approver and
// viewer carry the groups the minds chart binds roles to; intruder is authenticated but has
// no groups, for tests that prove a request is refused.
var users = []user{
	{name: "admin", groups: []string{"system:masters"}},
	{name: "approver", groups: []string{"minds:approvers"}},
	{name: "viewer", groups: []string{"minds:viewers"}},
	{name: "intruder"},
}

type tokenFile struct {
	path   string
	byUser map[string]string
}

// writeTokens writes a kube-apiserver --token-auth-file with a fresh random token per user,
// so a token leaked from an earlier run (a log, a CI artefact) is worthless.
func writeTokens(path string, identities []user) (tokenFile, error) {
	tf := tokenFile{path: path, byUser: map[string]string{}}
	var b strings.Builder
	for _, u := range identities {
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return tf, err
		}
		tok := hex.EncodeToString(raw)
		tf.byUser[u.name] = tok
		fmt.Fprintf(&b, "%s,%s,devcluster-%s", tok, u.name, u.name)
		if len(u.groups) > 0 { // a fourth, empty column would mean one group named ""
			fmt.Fprintf(&b, ",\"%s\"", strings.Join(u.groups, ","))
		}
		b.WriteString("\n")
	}
	return tf, writeFileAtomic(path, []byte(b.String()), 0o600)
}

type pkiFiles struct {
	caCert, caPEM, caKey    string
	servingCert, servingKey string
	saKey, saPub            string
}

// ensurePKI creates, or reuses, the CA and the service-account key pair in dir and issues a
// fresh serving certificate. Reusing the CA keeps kubeconfigs copied elsewhere valid, and
// reusing the service-account key keeps ServiceAccount tokens stored in etcd valid across
// restarts with the same --dir.
func ensurePKI(dir string, servingIPs ...net.IP) (pkiFiles, error) {
	p := pkiFiles{
		caCert:      filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
	}
	caKeyPath := filepath.Join(dir, "ca.key")
	p.caKey = caKeyPath
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}

	caCert, caKey, err := loadCA(p.caCert, caKeyPath)
	if err != nil {
		caCert, caKey, err = newCA(p.caCert, caKeyPath)
		if err != nil {
			return p, err
		}
	}
	p.caPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}))

	if err := newServingCert(p.servingCert, p.servingKey, caCert, caKey, servingIPs); err != nil {
		return p, err
	}
	if err := ensureSAKey(p.saKey, p.saPub); err != nil {
		return p, err
	}
	return p, nil
}

func loadCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || time.Until(cert.NotAfter) < 30*24*time.Hour {
		return nil, nil, errors.New("CA unusable or about to expire")
	}
	return cert, key, nil
}

func newCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "devcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, nil, err
	}
	if err := writeCert(certPath, der); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// newServingCert issues the API server's serving certificate; extraIPs are the addresses it
// listens on besides loopback (the real node's bridge gateway).
func newServingCert(certPath, keyPath string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, extraIPs []net.IP) error {
	// 10.0.0.1 is the "kubernetes" Service ClusterIP in serviceCIDR.
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("10.0.0.1")}, extraIPs...)
	return issueCert(certPath, keyPath, ca, caKey, pkix.Name{CommonName: "kube-apiserver"},
		x509.ExtKeyUsageServerAuth, ips, []string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		})
}

// issueCert writes a fresh key and a certificate for subject, signed by the CA, valid for a
// year, for one use (server or client authentication) and, for a server, its addresses.
func issueCert(certPath, keyPath string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, subject pkix.Name,
	usage x509.ExtKeyUsage, ips []net.IP, dnsNames []string,
) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writeCert(certPath, der)
}

// ensureSAKey keeps an existing service-account signing key; see ensurePKI for why.
func ensureSAKey(keyPath, pubPath string) error {
	if _, err := os.Stat(keyPath); err == nil {
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{
		Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key),
	}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func writeCert(path string, der []byte) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// writeFileAtomic replaces path in one rename, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeKubeconfig writes one context per user, all against the same cluster, with admin as
// the current context so that plain `kubectl --kubeconfig DIR/kubeconfig` is all-powerful.
func writeKubeconfig(path, server, caPEM string, tokens tokenFile) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: []byte(caPEM),
	}
	for _, u := range users {
		cfg.AuthInfos[u.name] = &clientcmdapi.AuthInfo{Token: tokens.byUser[u.name]}
		cfg.Contexts[u.name] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: u.name}
	}
	cfg.CurrentContext = "admin"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}

// waitReady polls /readyz until it answers "ok" (true) or ctx ends (false). /readyz includes
// the RBAC bootstrap post-start hook, so once it is ok the default roles exist.
func waitReady(ctx context.Context, server, caPEM, token string) bool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(caPEM))
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/readyz", nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err == nil {
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
					return true
				}
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
