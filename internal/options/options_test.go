package options_test

import (
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"petstore/internal/banner"
	"petstore/internal/options"
	"petstore/internal/usage"
)

// parse binds the flags on new flag sets (serve with PocketBase's --http
// and --https, which Parse reads), parses args as serve's, and parses the
// options.
func parse(t *testing.T, args ...string) (options.Options, error) {
	t.Helper()
	root, serve := pflag.NewFlagSet("petstore", pflag.ContinueOnError), pflag.NewFlagSet("serve", pflag.ContinueOnError)
	serve.String("http", "", "")
	serve.String("https", "", "")
	f := options.Bind(root, serve, banner.Invocation{})
	all := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	all.AddFlagSet(root)
	all.AddFlagSet(serve)
	if err := all.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Parse(true, io.Discard, io.Discard)
}

// Parse makes values of the flags: the parts receive them parsed.
func TestParseMakesValues(t *testing.T) {
	opts, err := parse(t, "--http", "10.0.0.7:8090", "--public-url", "https://shop.example.org/api/v1",
		"--proxy-addresses", "127.0.0.1, 10.0.0.0/8", "--trusted-proxy-headers", "X-Forwarded-For",
		"--ratelimit-redis", "redis://:hunter2@127.0.0.1:6379/0", "--metrics-addr", "127.0.0.1:9090",
		"--cluster-etcd", "http://127.0.0.1:2379,http://127.0.0.1:2380", "--replica-url", "file:///var/lib/replica/", "--cluster-insecure-peers", "--drain-delay", "2s", "--usage-retention", "48h")
	if err != nil {
		t.Fatal(err)
	}
	if got := opts.PublicURL.Public(); got != "https://shop.example.org/api/v1" {
		t.Errorf("public URL %q", got)
	}
	if want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}; !slices.Equal(opts.Server.ProxyAddresses, want) {
		t.Errorf("proxy addresses %v, want %v", opts.Server.ProxyAddresses, want)
	}
	if want := []string{"X-Forwarded-For"}; !slices.Equal(opts.Server.TrustedProxyHeaders, want) {
		t.Errorf("trusted proxy headers %q, want %q", opts.Server.TrustedProxyHeaders, want)
	}
	if got := opts.Limits.Store(); got != "redis://:xxxxx@127.0.0.1:6379/0" {
		t.Errorf("rate limits counted in %q", got)
	}
	c := opts.Cluster
	if !c.Enabled() || len(c.Endpoints) != 2 || c.AdvertiseURL != "http://10.0.0.7:8090" || c.Replica.String() != "file:///var/lib/replica" {
		t.Errorf("cluster %+v", c)
	}
	if opts.MetricsAddr != "127.0.0.1:9090" || opts.Server.DrainDelay != 2*time.Second || opts.UsageRetention != 48*time.Hour ||
		!opts.Startup.Serving || !opts.Startup.Cluster {
		t.Errorf("options %+v, startup %+v", opts, opts.Startup)
	}
}

// A value refused names its flag and its variable, and never the Redis
// password. TestEveryFlagRefusesABadValue (testkit/realserver) walks every
// flag through the binary.
func TestParseNamesTheFlag(t *testing.T) {
	if opts, err := parse(t); err != nil || opts.UsageRetention != usage.DefaultRetention {
		t.Fatalf("the defaults: %v, usage kept %v", err, opts.UsageRetention)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--public-url", "shop.example.org/v1"}, `invalid --public-url (or PETSTORE_PUBLIC_URL) "shop.example.org/v1"`},
		{[]string{"--ratelimit-redis", "http://:hunter2@127.0.0.1:6379"}, `invalid --ratelimit-redis (or PETSTORE_RATELIMIT_REDIS): scheme "http"`},
		{[]string{"--ratelimit-redis", "redis+cluster://127.0.0.1:7000", "--ratelimit-prefix", "pet{store}"}, `--ratelimit-prefix "pet{store}"`},
		{[]string{"--metrics-addr", "localhost"}, `invalid --metrics-addr (or PETSTORE_METRICS_ADDR) "localhost": HOST:PORT`},
		{[]string{"--trusted-proxy-headers", "X-Forwarded-For,X Real IP"}, `invalid --trusted-proxy-headers (or PETSTORE_TRUSTED_PROXY_HEADERS) "X-Forwarded-For,X Real IP"`},
		{[]string{"--max-conns", "-1"}, `invalid --max-conns (or PETSTORE_MAX_CONNS) "-1"`},
		{[]string{"--lock-timeout", "-1s"}, `invalid --lock-timeout (or PETSTORE_LOCK_TIMEOUT) "-1s"`},
		{[]string{"--cluster-etcd", "http://127.0.0.1:2379", "--replica-url", "file://nas/x"}, `--replica-url: "file://nas/x" names a host`},
		{[]string{"--cluster-etcd", "http://127.0.0.1:2379", "--replica-url", "file:///r", "--cluster-insecure-peers", "--https", "shop.example.org:443"}, "--https is not supported in cluster mode"},
		{[]string{"--smtp-username", "shop"}, `invalid --smtp-username (or PETSTORE_SMTP_USERNAME) "shop": it declares nothing without --smtp-host`},
	} {
		_, err := parse(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v, want %q", tt.args, err, tt.want)
		}
	}
}
