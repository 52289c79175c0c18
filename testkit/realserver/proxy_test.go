package realserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/options"
	"petstore/testkit/redistest"
)

// The proxy configurations self-hosters install, deploy/nginx.conf and
// deploy/Caddyfile, run as written (only the addresses differ) in front of
// two instances sharing one data directory and a Redis, as in
// deploy/compose.yaml: the API, every page, the dashboard and its realtime
// stream answer through them, and the API's links and document name the
// public URL. With the prefix snippets of docs/operations.md added, the same
// holds for the API under /api/v1.
func TestDeployProxiesServeEverything(t *testing.T) {
	nginxID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	caddyID := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for _, proxy := range []struct {
		name, tool string
		start      func(t *testing.T, listen string, upstreams []string)
		id         *regexp.Regexp // the proxy's request ids, which petstore keeps
		api        string         // the API's path at the proxy
	}{
		{"nginx", "nginx", startNginx, nginxID, "/v1"},
		{"caddy", "caddy", startCaddy, caddyID, "/v1"},
		{"nginx under /api/v1", "nginx", startNginxPrefixed, nginxID, "/api/v1"},
		{"caddy under /api/v1", "caddy", startCaddyPrefixed, caddyID, "/api/v1"},
	} {
		t.Run(proxy.name, func(t *testing.T) {
			requireTool(t, proxy.tool)
			redis := redistest.Start(t)
			listen := freeAddr(t)
			public := "http://" + listen + proxy.api
			dir := t.TempDir()
			key, _ := createKey(t, dir, "--plan", "free")
			args := []string{"--public-url", public, "--ratelimit-redis", redis.URL(0), "--ratelimit-anonymous", "3",
				"--proxy-addresses", "127.0.0.1", "--trusted-proxy-headers", "X-Forwarded-For"}
			a := start(t, dir, args...)
			b := start(t, dir, args...)
			proxy.start(t, listen, []string{a.Addr, b.Addr})
			checkThroughProxy(t, "http://"+listen, public, key, proxy.id)
			checkClientsCountedApart(t, public)
		})
	}
}

func checkThroughProxy(t *testing.T, base, public, key string, proxyIDs *regexp.Regexp) {
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path, want string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q:\n%.300s", path, resp.StatusCode, want, body)
		}
	}
	get("/", "/staff/")
	get("/docs/", "<html")
	get("/staff/", "<html")
	get("/_/", "<html")
	get("/api/health", `"code":200`)
	get("/readyz", `"rateLimiter":"redis"`)
	// The reference page's copy of the document names the public URL (the
	// copy for tools names its path alone).
	get("/docs/openapi.json", `"url":"`+public+`"`)

	req, _ := http.NewRequest(http.MethodPost, public+"/pets", strings.NewReader(`{"name":"Rex","categoryId":1}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusCreated || !strings.HasPrefix(loc, public+"/pets/") {
		t.Fatalf("create through the proxy: %d, Location %q; want 201 under %s", resp.StatusCode, loc, public)
	}
	if id := resp.Header.Get("Request-Id"); !proxyIDs.MatchString(id) {
		t.Errorf("create through the proxy: Request-Id %q, want the proxy's id (%v)", id, proxyIDs)
	}
	req, _ = http.NewRequest(http.MethodGet, resp.Header.Get("Location"), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"Rex"`) {
		t.Errorf("GET the Location through the proxy: %d %s", resp.StatusCode, body)
	}

	// The realtime stream's first event arrives at once: nothing between
	// client and server holds it back.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/realtime", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("realtime through the proxy: %v", err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() == "event:PB_CONNECT" {
			return
		}
	}
	t.Errorf("realtime through the proxy: no PB_CONNECT event within 5 s (%d, %v)", resp.StatusCode, lines.Err())
}

// checkClientsCountedApart sends keyless requests through the proxy, to the
// API at public, from two addresses: each is counted in its own network's
// window (3 a minute), not the proxy's.
func checkClientsCountedApart(t *testing.T, public string) {
	t.Helper()
	status := func(ip string) int {
		t.Helper()
		resp, err := from(ip).Get(public + "/pets")
		if err != nil {
			t.Fatalf("GET %s/pets from %s through the proxy: %v", public, ip, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 4 {
		want := http.StatusUnauthorized
		if i == 3 {
			want = http.StatusTooManyRequests
		}
		if got := status("127.0.0.2"); got != want {
			t.Fatalf("keyless request %d from 127.0.0.2 through the proxy: %d, want %d", i, got, want)
		}
	}
	if got := status("127.0.0.3"); got != http.StatusUnauthorized {
		t.Errorf("keyless request from 127.0.0.3 through the proxy, after 127.0.0.2's window filled: %d, want 401 (its own window)", got)
	}
}

// The start warns when proxies are named and no header gives the client's
// address: every client would count as the proxy.
func TestProxyAddressesWithoutAHeaderWarn(t *testing.T) {
	const warning = `--proxy-addresses names proxies but no header gives the client's address`
	if p := start(t, t.TempDir(), "--proxy-addresses", "127.0.0.1"); !strings.Contains(p.Output(), warning) {
		t.Errorf("serve --proxy-addresses without a header does not warn:\n%s", p.Output())
	}
	if p := start(t, t.TempDir(), "--proxy-addresses", "127.0.0.1", "--trusted-proxy-headers", "X-Forwarded-For"); strings.Contains(p.Output(), warning) ||
		!strings.Contains(p.Output(), `msg="Trusted proxy headers set from --trusted-proxy-headers" headers=[X-Forwarded-For]`) {
		t.Errorf("serve --trusted-proxy-headers X-Forwarded-For:\n%s", p.Output())
	}
}

// startNginx runs deploy/nginx.conf, listening on listen with upstreams as its
// servers, in an nginx of its own until the test ends.
func startNginx(t *testing.T, listen string, upstreams []string) {
	startNginxWith(t, "nginx.conf", listen, upstreams)
}

// startNginxPrefixed runs deploy/nginx.conf with operations.md's /api/v1
// location added to its server block, as that page says.
func startNginxPrefixed(t *testing.T, listen string, upstreams []string) {
	conf := replaceOnce(t, readDeployFile(t, "nginx.conf"), "    location / {\n",
		docsSnippet(t, "nginx", "location /api/v1/")+"\n    location / {\n")
	runNginx(t, "nginx.conf", conf, listen, upstreams)
}

// docsSnippet is the code block in lang of docs/operations.md that holds
// marker.
func docsSnippet(t *testing.T, lang, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(deployPath(t)), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```"+lang+"\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("docs/operations.md has no %s block with %q", lang, marker)
	return ""
}

// upstreamServers are the server lines of a configuration's upstream block.
var upstreamServers = regexp.MustCompile(`(?m)^    server \S+( [^;\n]*)?;\n`)

// startNginxWith runs deploy/FILE as written, its upstream's servers (with
// their parameters) replaced by upstreams, in an nginx of its own until the
// test ends.
func startNginxWith(t *testing.T, file, listen string, upstreams []string) {
	runNginx(t, file, readDeployFile(t, file), listen, upstreams)
}

// runNginx runs conf, deploy/FILE's text, as startNginxWith runs the file.
func runNginx(t *testing.T, file, conf, listen string, upstreams []string) {
	lines := upstreamServers.FindAllStringSubmatch(conf, -1)
	if len(lines) == 0 {
		t.Fatalf("deploy/%s lists no upstream server", file)
	}
	servers := ""
	for _, u := range upstreams {
		servers += "    server " + u + lines[0][1] + ";\n"
	}
	conf = upstreamServers.ReplaceAllLiteralString(conf, "")
	conf = replaceOnce(t, conf, "    keepalive 32;\n", servers+"    keepalive 32;\n")
	conf = replaceOnce(t, conf, "listen 80;", "listen "+listen+";")

	dir := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the workers read the test's directories
	}
	main := fmt.Sprintf(`%s
daemon off;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events {}
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    include %[2]s/petstore.conf;
}
`, user, dir)
	writeFile(t, filepath.Join(dir, "petstore.conf"), conf)
	writeFile(t, filepath.Join(dir, "nginx.conf"), main)
	runProxy(t, listen, exec.Command("nginx", "-p", dir, "-c", filepath.Join(dir, "nginx.conf")))
}

// startCaddy runs deploy/Caddyfile, as written, with PETSTORE_SITE and
// PETSTORE_UPSTREAMS set, in a Caddy of its own until the test ends.
func startCaddy(t *testing.T, listen string, upstreams []string) {
	startCaddyWith(t, "Caddyfile", listen, upstreams)
}

// startCaddyPrefixed runs deploy/Caddyfile with operations.md's /api/v1
// handle ahead of its reverse_proxy, wrapped in handle { … }, as that page
// says.
func startCaddyPrefixed(t *testing.T, listen string, upstreams []string) {
	const site = "{$PETSTORE_SITE:localhost} {\n"
	conf := strings.TrimSuffix(readDeployFile(t, "Caddyfile"), "}\n")
	conf = replaceOnce(t, conf, site, site+docsSnippet(t, "caddyfile", "handle /api/v1/*")+"\thandle {\n") + "\t}\n}\n"
	runCaddy(t, conf, listen, upstreams)
}

// startCaddyWith runs deploy/'s file as startCaddy runs deploy/Caddyfile.
func startCaddyWith(t *testing.T, file, listen string, upstreams []string) {
	runCaddy(t, readDeployFile(t, file), listen, upstreams)
}

// runCaddy runs conf, a Caddyfile, as startCaddy runs deploy/Caddyfile.
func runCaddy(t *testing.T, caddyfile, listen string, upstreams []string) {
	dir := t.TempDir()
	// Global options ahead of the file: no admin endpoint (tests may run
	// side by side), and Caddy's state in the test's directory.
	conf := "{\n\tadmin off\n\tstorage file_system " + dir + "\n}\n\n" + caddyfile
	writeFile(t, filepath.Join(dir, "Caddyfile"), conf)
	cmd := exec.Command("caddy", "run", "--adapter", "caddyfile", "--config", filepath.Join(dir, "Caddyfile"))
	cmd.Env = append(os.Environ(),
		"HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir,
		"PETSTORE_SITE=http://"+listen,
		"PETSTORE_UPSTREAMS="+strings.Join(upstreams, " "))
	runProxy(t, listen, cmd)
}

// runProxy starts cmd, in a process group of its own so that its workers
// end with it, and waits until its listener answers.
func runProxy(t *testing.T, listen string, cmd *exec.Cmd) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + listen + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	out, _ := os.ReadFile(log.Name())
	t.Fatalf("%s did not serve /readyz on %s within 15 s:\n%s", cmd.Path, listen, out)
}

// requireTool fails the test in CI, and skips it elsewhere, when name is not
// installed (CI installs Debian's nginx and caddy).
func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s is not installed", name)
	}
}

// deployPath is the path of a file under the repository's deploy/, found
// from the module's root, wherever this package sits.
func deployPath(t *testing.T, elem ...string) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Join(append([]string{filepath.Dir(strings.TrimSpace(string(gomod))), "deploy"}, elem...)...)
}

func readDeployFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(deployPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("want %q once in the deploy file", old)
	}
	return strings.Replace(s, old, new, 1)
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Compose's stop_grace_period outlasts what a stop takes: the drain and the
// graceful shutdown that deploy/.env sets (or their defaults), and 5 s for
// the parts' stops (measured at about 1 s); else Compose kills petstore
// mid-request.
func TestComposeGraceOutlastsTheStop(t *testing.T) {
	setting := func(file, pattern, fallback string) time.Duration {
		t.Helper()
		value := fallback
		if m := regexp.MustCompile(`(?m)` + pattern).FindStringSubmatch(readDeployFile(t, file)); m != nil {
			value = m[1]
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			t.Fatalf("%s: %s: %v", file, pattern, err)
		}
		return d
	}
	grace := setting("compose.yaml", `^\s+stop_grace_period: (\S+)$`, "10s")
	drain := setting(".env", `^PETSTORE_DRAIN_DELAY=(\S+)$`, "0s")
	shutdown := setting(".env", `^PETSTORE_SHUTDOWN_TIMEOUT=(\S+)$`, options.DefaultShutdownTimeout.String())
	if grace < drain+shutdown+5*time.Second {
		t.Errorf("stop_grace_period %v, under the drain %v plus the shutdown %v plus 5 s", grace, drain, shutdown)
	}
}
