package api_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"petstore/internal/limits"
	"petstore/internal/options"
	"petstore/testkit/apptest"
)

// With --proxy-addresses naming the proxy (127.0.0.1) and X-Forwarded-For
// trusted, a client on another address (127.0.0.9) that names a new address
// in X-Forwarded-For on each request is counted as itself: its keyless
// window fills. The proxy's own requests are counted per forwarded client.
func TestForwardedHeadersCountFromProxiesAlone(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{
		Limits: limits.Config{AnonymousPerMinute: 3},
		Server: options.Server{ProxyAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
	})
	s.App.Settings().TrustedProxy.Headers = []string{"X-Forwarded-For"}
	from := func(local string) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}}}
	}
	get := func(c *http.Client, forwarded string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/pets", nil)
		req.Header.Set("X-Forwarded-For", forwarded)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	client := from("127.0.0.9")
	for i := range 6 {
		want := http.StatusUnauthorized
		if i >= 3 {
			want = http.StatusTooManyRequests
		}
		if got := get(client, fmt.Sprintf("2001:db8:%x::1", i)); got != want {
			t.Fatalf("request %d from 127.0.0.9 naming another /64: %d, want %d", i, got, want)
		}
	}
	proxy := from("127.0.0.1")
	for i := range 6 {
		if got := get(proxy, fmt.Sprintf("198.51.100.%d", i)); got != http.StatusUnauthorized {
			t.Fatalf("request %d from the proxy for client %d: %d, want 401 (its own window)", i, i, got)
		}
	}

	// X-Forwarded-Host and X-Forwarded-Proto name the served document's
	// server from the proxy alone.
	server := func(c *http.Client) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/docs/openapi.json", nil)
		req.Header.Set("X-Forwarded-Host", "evil.test")
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return firstServer(t, body, "the document")
	}
	if got := server(client); got != s.URL+"/v1" {
		t.Errorf("the document served to 127.0.0.9 naming X-Forwarded-Host evil.test names %s, want %s/v1", got, s.URL)
	}
	if got := server(proxy); got != "https://evil.test/v1" {
		t.Errorf("the document served through the proxy names %s, want the host it forwarded", got)
	}
}
