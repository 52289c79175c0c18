package cluster_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"petstore/internal/cluster"
	"petstore/testkit/etcdtest"
)

// startRefused starts a node process as serve does (cluster.Start) with
// flags, and returns why it refused to start; it fails the test when the
// node starts.
func startRefused(t *testing.T, flags cluster.Flags) error {
	t.Helper()
	cfg, err := flags.Config("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cluster.Start(cfg, t.TempDir(), slog.New(slog.DiscardHandler), nil)
	if err == nil {
		_ = p.Close()
		t.Fatalf("a node with %+v started", flags)
	}
	return err
}

// An etcd that takes clients with a certificate of its CA alone
// (--client-cert-auth): a node with one leads; a node without one, or with
// one of another CA, or that does not trust etcd's certificate, or speaks
// plain HTTP to it, refuses to start, naming the flag.
func TestEtcdWithClientCertificates(t *testing.T) {
	certs := etcdtest.MakeCerts(t)
	etcd := etcdtest.StartTLS(t, 1, certs)
	withCerts := func(c etcdtest.Certs) func(*cluster.Flags) {
		return func(f *cluster.Flags) { f.EtcdCA, f.EtcdCert, f.EtcdKey = c.CA, c.ClientCert, c.ClientKey }
	}
	n := startNodeWith(t, etcd, "a", withCerts(certs), cluster.Options{})
	waitFor(t, 10*time.Second, "the node with the client certificate leads", n.MayWrite)

	other := etcdtest.MakeCerts(t)
	for _, tc := range []struct {
		name   string
		change func(*cluster.Flags)
		want   string
	}{
		{"no client certificate", func(f *cluster.Flags) { f.EtcdCA = certs.CA }, "--cluster-etcd-cert: etcd at " + etcd.Members[0].ClientURL + " refuses this node's TLS connection"},
		{"another CA's client certificate", func(f *cluster.Flags) {
			withCerts(other)(f)
			f.EtcdCA = certs.CA
		}, "--cluster-etcd-cert: etcd at"},
		{"etcd's CA not trusted", func(f *cluster.Flags) {
			withCerts(certs)(f)
			f.EtcdCA = ""
		}, "--cluster-etcd-ca: etcd's certificate at " + etcd.Members[0].ClientURL + " is not signed by a CA this node trusts"},
		{"plain HTTP", func(f *cluster.Flags) { f.Etcd = strings.Replace(f.Etcd, "https://", "http://", 1) }, "--cluster-etcd: etcd at http://127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := nodeFlags(t, etcd, "b", "http://127.0.0.1:1")
			tc.change(&f)
			start := time.Now()
			err := startRefused(t, f)
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("refused with %q, want %q…", err, tc.want)
			}
			t.Logf("refused in %s: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// An etcd with authentication on (a user and a role made with etcd's Auth
// API): a node signed in as the user leads; a wrong password, no user, or a
// user whose role may not touch the cluster's keys refuses to start,
// naming the flag. The password never shows in the node's log.
func TestEtcdWithAuthentication(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	const password = "the petstore user's password"
	etcd.EnableAuth(t, "petstore", password, "/test/")
	root := etcd.Client(t, "root", etcdtest.RootPassword)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := root.UserAdd(ctx, "elsewhere", password); err != nil {
		t.Fatal(err)
	}
	passwordFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, etcd, "a", func(f *cluster.Flags) { f.EtcdUser, f.EtcdPasswordFile = "petstore", passwordFile }, cluster.Options{})
	waitFor(t, 10*time.Second, "the node signed in as the user leads", n.MayWrite)
	if strings.Contains(n.logs.String(), password) {
		t.Errorf("the log shows the password:\n%s", n.logs.String())
	}

	for _, tc := range []struct {
		name     string
		user     string
		password string // in the variable
		want     string
	}{
		{"a wrong password", "petstore", "not the password", `--cluster-etcd-user: etcd refuses user "petstore" with this password`},
		{"no user", "", "", "--cluster-etcd-user: etcd's authentication is on, and this node signs in as no user"},
		{"a user whose role may not", "elsewhere", password, `--cluster-etcd-user: etcd's user "elsewhere" may not read and write the keys under /test/`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(cluster.EtcdPasswordVar, tc.password)
			f := nodeFlags(t, etcd, "b", "http://127.0.0.1:1")
			f.EtcdUser = tc.user
			err := startRefused(t, f)
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), password) {
				t.Errorf("refused with %q, want %q…, without the password", err, tc.want)
			}
		})
	}
}
