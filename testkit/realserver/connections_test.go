package realserver_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/connlimit"
	"petstore/testkit/realserver"
)

// idleClient holds connections to a server from one loopback address, as a
// client hoarding them does: each sends GET /api/health once and, served,
// stays open and idle until the test ends.
type idleClient struct {
	t    *testing.T
	addr string // the server's
	from string // the client's address, in 127/8
	path string // what each connection asks for; /api/health when empty

	mu      sync.Mutex
	held    []net.Conn
	served  int
	refused int
}

// hold opens n connections, 32 at a time.
func (c *idleClient) hold(n int) {
	c.t.Helper()
	var wg sync.WaitGroup
	next := make(chan struct{})
	for range 32 {
		wg.Go(func() {
			for range next {
				c.open()
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	c.t.Cleanup(func() {
		for _, conn := range c.held {
			conn.Close()
		}
	})
}

func (c *idleClient) open() {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(c.from)}}
	conn, err := d.Dial("tcp", c.addr)
	if err != nil {
		c.t.Errorf("dial from %s: %v", c.from, err)
		return
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	path := c.path
	if path == "" {
		path = "/api/health"
	}
	_, err = io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: petstore\r\n\r\n")
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || resp.StatusCode != http.StatusOK {
		// Closed by the server as soon as it was accepted.
		c.refused++
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	c.served++
	c.held = append(c.held, conn)
}

// from is an HTTP client whose connections come from the loopback address
// ip.
func from(ip string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// metricValue reads a metric without labels, or with the given labels.
func metricValue(t *testing.T, metricsAddr, name, labels string) float64 {
	t.Helper()
	for _, m := range scrape(t, metricsAddr)[name].GetMetric() {
		if labelsOf(m) == labels {
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s{%s}", name, labels)
	return 0
}

// settledOpen is petstore_http_connections_open once it holds still: the
// harness's client may have closed a connection that the server has not
// yet seen closed.
func settledOpen(t *testing.T, metricsAddr string) int {
	t.Helper()
	last := -1
	for range 50 {
		n := int(metricValue(t, metricsAddr, "petstore_http_connections_open", ""))
		if n == last {
			return n
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("petstore_http_connections_open does not settle: %d", last)
	return 0
}

// TestIdleConnectionsCannotStarveOthers runs the binary with a limit of
// 1,024 open files (prlimit), the default bounds (256 connections per client
// address, 768 in all) and 300 per /24. 3,000 idle keep-alive connections
// from 127.0.0.1, beyond the descriptors the process has, leave 256 open and
// the others closed at once; a client from 127.0.0.2 is then served at once.
// A second hoarder in the same /24 (127.0.0.3) gets what is left of its
// network's 300, and a fresh address in another /24 is served at once:
// addresses of one network cannot fill the global bound. Hoarders in two
// more /24s fill it, and a last address is refused; the metrics count each
// refusal by its bound, and the server logs its limit and the refusals.
func TestIdleConnectionsCannotStarveOthers(t *testing.T) {
	metricsAddr := freeAddr(t)
	p, err := realserver.StartUnder(func(serve []string) *exec.Cmd {
		return exec.Command("prlimit", append([]string{"--nofile=512:1024", "--"}, serve...)...)
	}, bin, t.TempDir(), "--metrics-addr", metricsAddr, "--max-conns-per-network", "300")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if out := p.Output(); !strings.Contains(out, `msg="Open files limit" soft=1024 hard=1024`) ||
		!strings.Contains(out, `msg="Connection bounds" maxConns=768 maxConnsPerAddress=256 maxConnsPerNetwork=300`) {
		t.Errorf("serve's log does not give the open files limit raised to 1024 and the bounds 768, 256 and 300:\n%s", out)
	}
	refused := func(reason string) int {
		return int(metricValue(t, metricsAddr, "petstore_http_connections_refused_total", "reason="+reason))
	}
	servedAtOnce := func(ip string) {
		t.Helper()
		other := from(ip)
		for _, path := range []string{"/api/health", "/v1/pets", "/staff/"} {
			asked := time.Now()
			resp, err := other.Get(p.URL + path)
			if err != nil {
				t.Fatalf("GET %s from %s while others hoard: %v", path, ip, err)
			}
			resp.Body.Close()
			// Starved, it would wait for idle connections to time out (75 s).
			if took := time.Since(asked); resp.StatusCode >= 500 || took > 2*time.Second {
				t.Errorf("GET %s from %s while others hoard: %d in %v, want an answer at once", path, ip, resp.StatusCode, took)
			}
		}
	}
	// The open connections once the answers' have closed.
	waitOpen := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); metricValue(t, metricsAddr, "petstore_http_connections_open", "") != float64(want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("petstore_http_connections_open: %v, want %d", metricValue(t, metricsAddr, "petstore_http_connections_open", ""), want)
			}
		}
	}

	// The harness's own client may hold a connection from 127.0.0.1 too.
	harness := settledOpen(t, metricsAddr)
	hoarder := &idleClient{t: t, addr: p.Addr, from: "127.0.0.1"}
	started := time.Now()
	hoarder.hold(3000)
	if hoarder.served != 256-harness || hoarder.refused != 2744+harness {
		t.Fatalf("3,000 connections from 127.0.0.1: %d served and held, %d closed at once; want %d and %d",
			hoarder.served, hoarder.refused, 256-harness, 2744+harness)
	}
	t.Logf("3,000 connections from 127.0.0.1 in %v: %d held idle, %d closed at once", time.Since(started).Round(time.Millisecond), hoarder.served, hoarder.refused)
	servedAtOnce("127.0.0.2")
	if got := refused(connlimit.PerAddress); got != hoarder.refused {
		t.Errorf("refused per address: %d, want %d", got, hoarder.refused)
	}
	waitOpen(256)

	neighbour := &idleClient{t: t, addr: p.Addr, from: "127.0.0.3"}
	neighbour.hold(100)
	if neighbour.served != 44 || neighbour.refused != 56 {
		t.Errorf("100 connections from 127.0.0.3, with 256 open from its /24: %d held, %d closed; want 44 and 56 (300 a /24)", neighbour.served, neighbour.refused)
	}
	if got := refused(connlimit.PerNetwork); got != 56 {
		t.Errorf("refused per network: %d, want 56", got)
	}
	servedAtOnce("127.0.1.1")
	waitOpen(300)

	// 300 open: 256 more from 127.0.1.1, then 212 from 127.0.2.1 fill 768.
	for _, c := range []struct {
		ip   string
		held int
	}{{"127.0.1.1", 256}, {"127.0.2.1", 212}} {
		hoarder := &idleClient{t: t, addr: p.Addr, from: c.ip}
		hoarder.hold(256)
		if hoarder.served != c.held || hoarder.refused != 256-c.held {
			t.Errorf("256 connections from %s: %d held, %d closed; want %d and %d", c.ip, hoarder.served, hoarder.refused, c.held, 256-c.held)
		}
	}
	late := &idleClient{t: t, addr: p.Addr, from: "127.0.3.1"}
	late.hold(3)
	if late.served != 0 || late.refused != 3 {
		t.Errorf("with 768 connections open, 127.0.3.1: %d held, %d closed; want all 3 closed (the global bound)", late.served, late.refused)
	}
	if got := metricValue(t, metricsAddr, "petstore_http_connections_open", ""); got != 768 {
		t.Errorf("petstore_http_connections_open: %v, want 768", got)
	}
	if got := refused(connlimit.Global); got != 44+3 {
		t.Errorf("refused by the global bound: %d, want 47", got)
	}
	out := p.Output()
	for _, line := range []string{
		`msg="Connections refused: as many are open as --max-conns allows"`,
		`msg="Connections refused: a client network holds as many as --max-conns-per-address allows" network=127.0.0.1`,
		`msg="Connections refused: a client network holds as many as --max-conns-per-network allows" network=127.0.0.0/24`,
	} {
		if !strings.Contains(out, line) {
			t.Errorf("serve's log does not warn of the refusals: no %s in\n%s", line, out)
		}
	}
}

// A reverse proxy's connections are not bound per address
// (--proxy-addresses), and count towards the global bound; others' are.
func TestProxyConnectionsAreNotBoundPerAddress(t *testing.T) {
	metricsAddr := freeAddr(t)
	p := start(t, t.TempDir(), "--metrics-addr", metricsAddr,
		"--max-conns-per-address", "10", "--max-conns", "100", "--proxy-addresses", "10.0.0.0/8, 127.0.0.1")
	harness := settledOpen(t, metricsAddr)
	proxy := &idleClient{t: t, addr: p.Addr, from: "127.0.0.1"}
	proxy.hold(60)
	if proxy.served != 60 {
		t.Errorf("60 connections from the proxy's address: %d held, %d closed; want all held", proxy.served, proxy.refused)
	}
	client := &idleClient{t: t, addr: p.Addr, from: "127.0.0.2"}
	client.hold(15)
	if client.served != 10 || client.refused != 5 {
		t.Errorf("15 connections from 127.0.0.2: %d held, %d closed; want 10 and 5", client.served, client.refused)
	}
	more := &idleClient{t: t, addr: p.Addr, from: "127.0.0.1"}
	more.hold(40)
	// The harness's, 60 and 10 open: 30 more reach the global bound.
	if want := 30 - harness; more.served != want || more.refused != 40-want {
		t.Errorf("40 more from the proxy's address with %d open: %d held, %d closed; want %d and %d (--max-conns 100)",
			70+harness, more.served, more.refused, want, 40-want)
	}
}

// serve refuses a --proxy-addresses that is not a list of addresses, and
// a negative bound.
func TestServeRefusesBadConnectionBounds(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--proxy-addresses", "127.0.0.1,proxy.example.org"}, `invalid --proxy-addresses (or PETSTORE_PROXY_ADDRESSES) "127.0.0.1,proxy.example.org": "proxy.example.org" is neither an IP address nor a network`},
		{[]string{"--max-conns", "-1"}, "a bound is positive, or 0 for the default"},
		{[]string{"--max-conns-per-network", "-1"}, "invalid --max-conns-per-network"},
		{[]string{"--max-realtime-per-network", "-1"}, "invalid --max-realtime-per-network"},
		{[]string{"--body-timeout", "-1s"}, "invalid --body-timeout"},
	} {
		_, stderr, err := realserver.Run(bin, dir, append([]string{"serve", "--http", "127.0.0.1:0"}, tt.args...)...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("serve %v: %v; stderr %q; want exit status 1 and %q", tt.args, err, stderr, tt.want)
		}
	}
}

// An idle keep-alive connection is closed after --idle-timeout, and its
// descriptor freed.
func TestIdleConnectionsAreClosed(t *testing.T) {
	metricsAddr := freeAddr(t)
	p := start(t, t.TempDir(), "--metrics-addr", metricsAddr, "--idle-timeout", "500ms")
	before := settledOpen(t, metricsAddr)
	c := &idleClient{t: t, addr: p.Addr, from: "127.0.0.2"}
	c.hold(5)
	if c.served != 5 {
		t.Fatalf("5 connections: %d held, want 5", c.served)
	}
	held := time.Now()
	for _, conn := range c.held {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
			t.Errorf("reading an idle connection: %d bytes, %v; want the server's close (EOF)", n, err)
		}
	}
	if took := time.Since(held); took < 400*time.Millisecond || took > 3*time.Second {
		t.Errorf("idle connections closed after %v, want about 500ms", took)
	}
	if open := settledOpen(t, metricsAddr); open > before {
		t.Errorf("petstore_http_connections_open: %d after the idle timeout, want at most %d", open, before)
	}
}

// A request whose body arrives a byte at a time is cut off --body-timeout
// after its headers, not after PocketBase's five-minute read timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "free")
	p := start(t, dir, "--body-timeout", "1s")
	conn, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na")
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	// A byte every 300 ms keeps the connection busy but never finishes.
	go func() {
		for range 40 {
			time.Sleep(300 * time.Millisecond)
			if _, err := conn.Write([]byte("a")); err != nil {
				return
			}
		}
	}()
	answer, err := io.ReadAll(conn)
	if took := time.Since(sent); err != nil || took < 900*time.Millisecond || took > 5*time.Second {
		t.Errorf("the slow body's connection closed after %v (%v); want about 1s", took, err)
	}
	if len(answer) > 0 && !strings.HasPrefix(string(answer), "HTTP/1.1 400") {
		t.Errorf("the slow body's answer: %q, want a 400 or none", answer)
	}
}

// The metrics listener holds a few connections: a flood of it is closed as
// soon as accepted, leaves the process its descriptors, and /healthz
// answers; its idle connections close within its idle timeout.
func TestMetricsListenerIsBounded(t *testing.T) {
	metricsAddr := freeAddr(t)
	p := start(t, t.TempDir(), "--metrics-addr", metricsAddr)
	held := 0
	for i := range 8 {
		flood := &idleClient{t: t, addr: metricsAddr, from: fmt.Sprintf("127.0.%d.9", i+1), path: "/metrics"}
		flood.hold(100)
		held += flood.served
	}
	if held > 32 {
		t.Errorf("800 connections to the metrics listener from 8 addresses: %d held, want at most 32", held)
	}
	resp, err := from("127.0.0.2").Get(p.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while the metrics listener is flooded: %v %v", resp, err)
	}
	resp.Body.Close()
	if out := p.Output(); !strings.Contains(out, `msg="Connections refused: as many are open as the metrics listener allows"`) {
		t.Errorf("serve's log does not warn of the metrics listener's refusals:\n%s", out)
	}
}
