package etcdtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Certs are PEM files a test made (MakeCerts): a CA of its own, a server
// certificate for 127.0.0.1 and a client certificate, both signed by it.
type Certs struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// MakeCerts makes a CA and a server and a client certificate signed by it,
// in a directory of the test's. Each call makes another CA.
func MakeCerts(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	now := time.Now()
	caKey := newKey()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdtest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	certs := Certs{CA: write("ca.pem", "CERTIFICATE", caDER)}
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) (cert, key string) {
		k := newKey()
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "PRIVATE KEY", keyDER)
	}
	certs.ServerCert, certs.ServerKey = issue(2, "server", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	certs.ClientCert, certs.ClientKey = issue(3, "client", x509.ExtKeyUsageClientAuth, nil)
	return certs
}

// clientTLS is the TLS configuration of a client holding the client
// certificate.
func (c Certs) clientTLS(t testing.TB) *tls.Config {
	t.Helper()
	cfg, err := c.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (c Certs) tlsConfig() (*tls.Config, error) {
	pem, err := os.ReadFile(c.CA)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// StartTLS runs a cluster as Start does, whose members serve clients over
// TLS alone (https:// client URLs) with certs' server certificate, and
// take only clients with a certificate signed by certs' CA
// (--client-cert-auth).
func StartTLS(t testing.TB, n int, certs Certs) *Cluster {
	t.Helper()
	return startWith(t, n, &certs)
}

// Client is a client of the cluster, with the client certificate of a TLS
// cluster, and user and password when given (EnableAuth's root user). The
// test closes it.
func (c *Cluster) Client(t testing.TB, user, password string) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Username: user, Password: password, Logger: zap.NewNop()}
	if c.Certs != nil {
		cfg.TLS = c.Certs.clientTLS(t)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// RootPassword is the password of the root user EnableAuth makes.
const RootPassword = "etcdtest-root"

// EnableAuth turns etcd's authentication on, with etcd's Auth API: a root
// user (etcd needs one; its password RootPassword), and user with
// password, whose role of the same name may read and write the keys under
// prefix alone.
func (c *Cluster) EnableAuth(t testing.TB, user, password, prefix string) {
	t.Helper()
	cli := c.Client(t, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cli.UserAdd(ctx, "root", RootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, user); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, user, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, user, password); return err },
		func() error { _, err := cli.UserGrantRole(ctx, user, user); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("etcd auth, step %d: %v", i+1, err)
		}
	}
}
