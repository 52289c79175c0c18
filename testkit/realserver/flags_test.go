package realserver_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"petstore/internal/banner"
	"petstore/internal/envflag"
	"petstore/internal/options"
)

// badFlag is a value a flag refuses, with the other flags (valid) that
// make the flag read at all.
type badFlag struct {
	flag, value string
	with        []string
}

// badFlags holds a refused value for every flag petstore adds to serve and
// to every command (options.Bind), and for healthcheck's.
var badFlags = []badFlag{
	{flag: "log-format", value: "xml"},
	{flag: "log-level", value: "loud"},
	{flag: "lock-timeout", value: "-1s"},
	{flag: "quick-check", value: "-1s"},
	{flag: "metrics-addr", value: "9090"},
	{flag: "public-url", value: "shop.example.org/v1"},
	{flag: "webhooks-allow-private", value: "maybe"},
	{flag: "allow-backup-restore", value: "maybe"},
	{flag: "backups-cron", value: "every day"},
	{flag: "backups-keep", value: "-2"},
	{flag: "backups-s3-bucket", value: "petstore-backups"}, // without its region, endpoint, key and secret
	{flag: "backups-s3-region", value: "eu-central-1"},     // without a bucket: it would declare nothing
	{flag: "backups-s3-endpoint", value: "s3.example.org", with: []string{"--backups-s3-bucket", "b", "--backups-s3-region", "r", "--backups-s3-access-key", "k"}},
	{flag: "backups-s3-access-key", value: "AKIA0"},
	{flag: "backups-s3-secret-file", value: "/no/such/secret"},
	{flag: "backups-s3-force-path-style", value: "true"},
	{flag: "smtp-host", value: "smtp.example.org:25"},
	{flag: "smtp-port", value: "0", with: []string{"--smtp-host", "smtp.example.org"}},
	{flag: "smtp-username", value: "shop"},
	{flag: "smtp-password-file", value: "/no/such/password"},
	{flag: "smtp-tls", value: "true"},
	{flag: "smtp-sender-name", value: "Shop\nBcc: everyone@example.org"},
	{flag: "smtp-sender-address", value: "shop at example.org"},
	{flag: "ratelimit-redis", value: "http://:hunter2@127.0.0.1:6379"},
	{flag: "ratelimit-prefix", value: "pet{store}", with: []string{"--ratelimit-redis", "redis+cluster://127.0.0.1:7000"}},
	{flag: "ratelimit-anonymous", value: "-1"},
	{flag: "ratelimit-guest", value: "-1"},
	{flag: "read-header-timeout", value: "-1s"},
	{flag: "body-timeout", value: "-1s"},
	{flag: "idle-timeout", value: "5"},
	{flag: "max-conns-per-address", value: "-1"},
	{flag: "max-conns-per-network", value: "-1"},
	{flag: "max-realtime-per-network", value: "-1"},
	{flag: "trusted-proxy-headers", value: "X Forwarded For"},
	{flag: "proxy-addresses", value: "10.0.0.0/33"},
	{flag: "max-conns", value: "-1"},
	{flag: "shutdown-timeout", value: "-1s"},
	{flag: "request-log", value: "some"},
	{flag: "audit-retention", value: "-1h"},
	{flag: "webhooks-retention", value: "-1h"},
	{flag: "usage-retention", value: "-1h"},
	{flag: "access-log", value: "maybe"},
	{flag: "slow-request", value: "-1s"},
	{flag: "drain-delay", value: "-1s"},
	{flag: "cluster-etcd", value: "127.0.0.1:2379", with: []string{"--replica-url", "file:///petstore-walk/replica"}},
	{flag: "cluster-name", value: "a/b", with: clusterMode},
	{flag: "node-name", value: "a b", with: clusterMode},
	{flag: "advertise-url", value: "http://10.0.0.1:8090/v1", with: clusterMode},
	// A host in a file URL: refused by the one parse of a replica URL,
	// before the data directory is made (it once passed a first check and
	// was refused by a second, after the directory was made and locked).
	{flag: "replica-url", value: "file://nas/x", with: []string{"--cluster-etcd", "http://127.0.0.1:1"}},
	{flag: "cluster-ttl", value: "1s", with: clusterMode},
	{flag: "cluster-set-aside-retention", value: "-1h", with: clusterMode},
	{flag: "cluster-sync", value: "true"}, // without --cluster-etcd
	{flag: "cluster-etcd-ca", value: "/no/such/ca.pem", with: clusterTLS},
	{flag: "cluster-etcd-cert", value: "/no/such/cert.pem", with: clusterTLS}, // without its key
	{flag: "cluster-etcd-key", value: "/no/such/key.pem", with: clusterTLS},   // without its certificate
	{flag: "cluster-etcd-user", value: "petstore", with: clusterMode},         // without its password
	{flag: "cluster-etcd-password-file", value: "/no/such/password", with: append([]string{"--cluster-etcd-user", "petstore"}, clusterMode...)},
	{flag: "cluster-secret-file", value: "/no/such/secret", with: clusterMode[:4]},
	{flag: "cluster-insecure-peers", value: "maybe", with: clusterMode[:4]},
}

// clusterMode is a cluster node's flags, valid; its first four are those
// of a node whose peers are authenticated, but with no secret.
var clusterMode = []string{"--cluster-etcd", "http://127.0.0.1:1", "--replica-url", "file:///petstore-walk/replica", "--cluster-insecure-peers"}

// clusterTLS is a node's flags, valid, with an https:// etcd.
var clusterTLS = []string{"--cluster-etcd", "https://127.0.0.1:1", "--replica-url", "file:///petstore-walk/replica", "--cluster-insecure-peers"}

// healthcheckBadFlags are healthcheck's flags, which have no variables.
var healthcheckBadFlags = []badFlag{
	{flag: "url", value: "127.0.0.1:8090"},
	{flag: "timeout", value: "-1s"},
}

// TestEveryFlagRefusesABadValue walks every flag petstore adds, each with a
// value it refuses, on the command line and in its variable: the command
// exits 1 with a message naming the flag, before the data directory is
// touched. On the command line the directory does not exist, and is not
// created; with the variable it exists, and is not chmod-ed, locked or
// written.
func TestEveryFlagRefusesABadValue(t *testing.T) {
	root, serve := pflag.NewFlagSet("petstore", pflag.ContinueOnError), pflag.NewFlagSet("serve", pflag.ContinueOnError)
	options.Bind(root, serve, banner.Invocation{})
	var bound []string
	for _, fs := range []*pflag.FlagSet{root, serve} {
		fs.VisitAll(func(f *pflag.Flag) { bound = append(bound, f.Name) })
	}
	for _, name := range bound {
		if !slices.ContainsFunc(badFlags, func(b badFlag) bool { return b.flag == name }) {
			t.Errorf("--%s has no bad value in badFlags: add one", name)
		}
	}

	for _, b := range badFlags {
		// --http: a value let through would serve on a free port, not 8090.
		with := append([]string{"serve", "--http", "127.0.0.1:0"}, b.with...)
		t.Run(b.flag, func(t *testing.T) {
			// --flag=value: a switch takes a separate word for an argument.
			refusedUntouched(t, b.flag, append(with, "--"+b.flag+"="+b.value), "", false)
		})
		t.Run(b.flag+"/variable", func(t *testing.T) {
			refusedUntouched(t, b.flag, with, envflag.Name(b.flag)+"="+b.value, true)
		})
	}
	for _, b := range healthcheckBadFlags {
		t.Run("healthcheck/"+b.flag, func(t *testing.T) {
			refusedUntouched(t, b.flag, []string{"healthcheck", "--" + b.flag + "=" + b.value}, "", true)
		})
	}
}

// refusedUntouched runs the binary with args and env (NAME=VALUE, or
// none) on a data directory, which exists when exists, and checks that it
// exits 1 naming flag, and that the directory is as it was: absent, or
// empty with its mode 0755 (a start makes it 0700 and locks it).
func refusedUntouched(t *testing.T, flag string, args []string, env string, exists bool) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pb_data")
	if exists {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// --dir first: cobra takes the argument after an unknown flag for its
	// value.
	cmd := exec.CommandContext(ctx, bin, append([]string{"--dir", dir}, args...)...)
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), "--"+flag) {
		t.Errorf("%s %q: %v, stderr:\n%s\nwant exit status 1 and a message naming --%s", env, args, err, stderr.String(), flag)
	}
	if strings.Contains(stderr.String(), "hunter2") {
		t.Errorf("%s %q: the Redis password is in the error:\n%s", env, args, stderr.String())
	}
	switch info, err := os.Stat(dir); {
	case !exists && !errors.Is(err, fs.ErrNotExist):
		t.Errorf("%s %q: the data directory was created (%v)", env, args, err)
	case exists && err != nil:
		t.Errorf("%s %q: the data directory: %v", env, args, err)
	case exists && info.Mode().Perm() != 0o755:
		t.Errorf("%s %q: the data directory's mode changed to %v", env, args, info.Mode())
	case exists:
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			t.Errorf("%s %q: the data directory holds %v (%v)", env, args, entries, err)
		}
	}
}
