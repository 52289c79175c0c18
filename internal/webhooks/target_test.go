package webhooks_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/internal/webhooks"
)

// A receiver using Standard Webhooks' own library verifies what Sign
// makes, with the one secret, and with either secret during a roll.
func TestSignaturesVerifyWithStandardWebhooks(t *testing.T) {
	current, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	previous, _ := webhooks.NewSecret()
	if !strings.HasPrefix(current, "whsec_") || len(current) < len("whsec_")+32 {
		t.Fatalf("secret %q: want whsec_ and the base64 of 24 or more bytes", current)
	}
	body := []byte(`{"type":"pet.created","timestamp":"2026-11-26T10:00:00Z","data":{"id":1,"name":"Rex <3","categoryId":2,"status":"available"}}`)
	now := time.Now().Unix()
	for _, signers := range [][]string{{current}, {current, previous}} {
		sig, err := webhooks.Sign("msg_abc", now, body, signers...)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(strings.Split(sig, " ")); got != len(signers) {
			t.Fatalf("signature %q: %d parts, want %d", sig, got, len(signers))
		}
		h := http.Header{}
		h.Set("webhook-id", "msg_abc")
		h.Set("webhook-timestamp", strconv.FormatInt(now, 10))
		h.Set("webhook-signature", sig)
		for _, secret := range signers {
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, h); err != nil {
				t.Errorf("signed by %d secrets: the library refuses: %v", len(signers), err)
			}
		}
		other, _ := webhooks.NewSecret()
		wh, _ := standardwebhooks.NewWebhook(other)
		if wh.Verify(body, h) == nil {
			t.Error("a stranger's secret verifies")
		}
		tampered := append([]byte{}, body...)
		tampered[10] = 'X'
		wh, _ = standardwebhooks.NewWebhook(current)
		if wh.Verify(tampered, h) == nil {
			t.Error("a changed body verifies")
		}
	}
}

// Endpoints are http or https, and without --webhooks-allow-private never
// loopback, private, link-local, CGNAT or metadata addresses. Only IP
// literals and names the hosts file or the refusal list knows are checked:
// nothing is looked up beyond this machine.
func TestCheckURLRefusesPrivateTargets(t *testing.T) {
	ctx := context.Background()
	strict := webhooks.Targets{Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
		case "public.test":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return nil, errors.New("no such host")
	}}
	for _, u := range []string{
		"http://127.0.0.1:8080/hook", "http://[::1]/", "http://localhost/", "https://LOCALHOST./x",
		"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://[fd00::1]/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://100.100.100.200/",
		"http://100.64.0.1/", "http://[fe80::1]/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/",
		"http://metadata.google.internal/", "http://rebind.test/", "http://224.0.0.1/", "http://2130706433/",
	} {
		err := strict.CheckURL(ctx, u)
		if err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	for _, u := range []string{"ftp://public.test/", "file:///etc/passwd", "javascript:alert(1)", "http://user:pw@public.test/", "http:///x"} {
		if err := strict.CheckURL(ctx, u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	for _, u := range []string{"https://public.test/hooks", "http://93.184.215.14:8080/"} {
		if err := strict.CheckURL(ctx, u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	open := webhooks.Targets{AllowPrivate: true}
	if err := open.CheckURL(ctx, "http://127.0.0.1:8080/hook"); err != nil {
		t.Errorf("allowed private: %v", err)
	}
	if err := open.CheckURL(ctx, "ftp://127.0.0.1/"); err == nil {
		t.Error("allowed private: ftp accepted")
	}
}

// A name that resolved to a public address when the endpoint was made may
// resolve to a private one later (DNS rebinding): the dialer's Control hook
// refuses it before connecting. The test resolver maps names to a loopback
// listener and to the metadata address; the listener sees no connection,
// and the metadata address is refused before any packet leaves.
func TestDialTimeCheckRefusesBeforeConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	var resolved atomic.Int64
	targets := webhooks.Targets{Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		resolved.Add(1)
		switch host {
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "metadata-rebind.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, errors.New("no such host")
	}}
	client := webhooks.NewClient(targets)
	defer client.Close()
	post := func(c *webhooks.Client, host string) (int, error) {
		u, err := url.Parse("http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/hook")
		if err != nil {
			t.Fatal(err)
		}
		status, _, err := c.Post(context.Background(), u, http.Header{"Content-Type": {"application/json"}}, "{}", 1024)
		return status, err
	}
	for _, host := range []string{"rebind.test", "metadata-rebind.test"} {
		status, err := post(client, host)
		if err == nil {
			t.Fatalf("%s: answered %d", host, status)
		}
		if !errors.Is(err, webhooks.ErrForbiddenTarget) {
			t.Fatalf("%s: %v, want the Control hook's refusal", host, err)
		}
	}
	if resolved.Load() != 2 {
		t.Errorf("the test resolver answered %d lookups, want 2", resolved.Load())
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Errorf("the loopback listener accepted %d connections, want none", n)
	}

	// With --webhooks-allow-private the same name connects: the refusal
	// above was the check's, not the network's.
	allowed := webhooks.NewClient(webhooks.Targets{AllowPrivate: true, Resolve: targets.Resolve})
	defer allowed.Close()
	_, _ = post(allowed, "rebind.test")
	deadline := time.Now().Add(2 * time.Second)
	for accepted.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if accepted.Load() != 1 {
		t.Errorf("allowed: the listener accepted %d connections, want 1", accepted.Load())
	}
}

// The ranges a public endpoint never is, beyond loopback, private and the
// rest: IPv4 written as IPv6 (compatible, mapped, translated), site-local,
// the documentation ranges, and this host's own addresses (here a public
// one, as a server's may be). Each is refused as an endpoint's URL and,
// given by a name's lookup, at dial time before connecting; the addresses
// next to each range are accepted.
func TestGuardRefusesTheRemainingRanges(t *testing.T) {
	own := netip.MustParseAddr("93.184.215.99")
	ownV6 := netip.MustParseAddr("2606:2800:21f:cb07::99")
	var looked netip.Addr
	targets := webhooks.WithHostAddrs(webhooks.Targets{Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
		if host != "target.test" {
			return nil, errors.New("no such host")
		}
		return []netip.Addr{looked}, nil
	}}, own, ownV6)
	client := webhooks.NewClient(targets)
	defer client.Close()
	target, _ := url.Parse("http://target.test:9/hook")
	for _, tc := range []struct {
		host   string
		refuse bool
	}{
		{"[::127.0.0.1]", true}, {"[::7f00:1]", true}, {"[::8.8.8.8]", true}, {"[::]", true},
		{"[::ffff:127.0.0.1]", true}, {"[::ffff:8.8.8.8]", true}, {"[::ffff:0:127.0.0.1]", true}, {"[::ffff:0:7f00:1]", true},
		{"[::ffff:0:8.8.8.8]", true},
		{"[fec0::1]", true}, {"[feff:ffff::1]", true},
		{"192.0.2.1", true}, {"192.0.2.255", true}, {"198.51.100.7", true}, {"203.0.113.200", true},
		{"[2001:db8::1]", true}, {"[2001:db8:ffff::1]", true}, {"[3fff::1]", true}, {"[3fff:fff:ffff::1]", true},
		{"93.184.215.99", true}, {"[2606:2800:21f:cb07::99]", true},
		{"[2001:db8::1%25eth0]", true}, {"[2606:4700::1111%25eth0]", true},
		{"192.0.3.1", false}, {"198.51.101.1", false}, {"203.0.114.1", false}, {"[2001:db9::1]", false},
		{"[3fff:1000::1]", false}, {"93.184.215.98", false}, {"8.8.8.8", false}, {"[2606:4700::1111]", false},
	} {
		err := targets.CheckURL(context.Background(), "http://"+tc.host+"/hook")
		if tc.refuse != (err != nil) || (tc.refuse && !errors.Is(err, webhooks.ErrForbiddenTarget)) {
			t.Errorf("%s: CheckURL %v, want refused %v", tc.host, err, tc.refuse)
		}
		if !tc.refuse {
			continue // nothing is sent beyond this machine
		}
		looked = netip.MustParseAddr(strings.Replace(strings.Trim(tc.host, "[]"), "%25", "%", 1))
		if looked.Is4In6() {
			continue // a lookup's mapped answer is its IPv4, dialed as such: checked below as IPv4
		}
		status, _, err := client.Post(context.Background(), target, http.Header{}, "{}", 1024)
		if !errors.Is(err, webhooks.ErrForbiddenTarget) {
			t.Errorf("%s by a lookup: %d %v, want refused before connecting", tc.host, status, err)
		}
	}
	// A lookup's mapped IPv4 answer is judged by its IPv4.
	for _, a := range []string{"::ffff:127.0.0.1", "::ffff:192.0.2.1", "::ffff:93.184.215.99"} {
		looked = netip.MustParseAddr(a)
		if err := targets.CheckURL(context.Background(), "http://target.test/"); !errors.Is(err, webhooks.ErrForbiddenTarget) {
			t.Errorf("target.test at %s: %v, want refused", a, err)
		}
	}
	looked = netip.MustParseAddr("::ffff:8.8.8.8")
	if err := targets.CheckURL(context.Background(), "http://target.test/"); err != nil {
		t.Errorf("target.test at ::ffff:8.8.8.8: %v, want accepted (it is 8.8.8.8)", err)
	}

	// The real host's interface addresses, as read at start, are refused.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		host := n.IP.String()
		if n.IP.To4() == nil {
			host = "[" + host + "]"
		}
		if err := (webhooks.Targets{}).CheckURL(context.Background(), "http://"+host+"/"); !errors.Is(err, webhooks.ErrForbiddenTarget) {
			t.Errorf("this host's %s: %v, want refused", host, err)
		}
	}
}

// Every block of IANA's special-purpose address registries (IPv4 and IPv6,
// as published on 2026-12-07), its first, middle and last address, is
// refused as an endpoint: those not globally reachable by the registries'
// own "Globally Reachable" column, and the few that are but that no webhook
// receiver sits at (anycast of protocols, DNS sinks). Multicast and the
// limited broadcast are refused too; the addresses just outside the blocks
// that border public space are accepted.
func TestGuardRefusesIANASpecialPurposeRanges(t *testing.T) {
	registry := []string{
		// https://www.iana.org/assignments/iana-ipv4-special-registry
		"0.0.0.0/8", "0.0.0.0/32", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.0.0/29", "192.0.0.8/32", "192.0.0.9/32", "192.0.0.10/32", "192.0.0.170/32", "192.0.0.171/32",
		"192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.88.99.2/32", "192.168.0.0/16",
		"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "255.255.255.255/32",
		// https://www.iana.org/assignments/iana-ipv6-special-registry
		"::1/128", "::/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64",
		"2001::/23", "2001::/32", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:2::/48", "2001:3::/32",
		"2001:4:112::/48", "2001:10::/28", "2001:20::/28", "2001:30::/28", "2001:db8::/32", "2002::/16",
		"2620:4f:8000::/48", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
		// Not in the registries: multicast.
		"224.0.0.0/4", "ff00::/8",
	}
	targets := webhooks.WithHostAddrs(webhooks.Targets{})
	for _, block := range registry {
		p := netip.MustParsePrefix(block)
		for _, a := range []netip.Addr{p.Addr(), middle(p), last(p)} {
			if err := targets.CheckURL(context.Background(), "http://"+hostOf(a)+"/hook"); !errors.Is(err, webhooks.ErrForbiddenTarget) {
				t.Errorf("%s (in %s): %v, want refused", a, block, err)
			}
		}
	}
	for _, public := range []string{"1.1.1.1", "8.8.8.8", "192.31.195.255", "192.31.197.1", "192.52.192.255", "192.88.98.1",
		"192.175.49.1", "223.255.255.254", "2606:4700::1111", "2001:200::1", "2620:4f:8001::1", "2a00:1450::1"} {
		if err := targets.CheckURL(context.Background(), "http://"+hostOf(netip.MustParseAddr(public))+"/hook"); err != nil {
			t.Errorf("%s: %v, want accepted", public, err)
		}
	}
}

// middle is the address halfway through p.
func middle(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	if bit := p.Bits(); bit < len(b)*8 {
		b[bit/8] |= 0x80 >> (bit % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// last is p's last address.
func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// hostOf is a as a URL's host.
func hostOf(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}
