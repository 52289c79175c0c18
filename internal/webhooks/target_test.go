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
