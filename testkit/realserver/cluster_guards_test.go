package realserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A follower's listener runs behind the public listener's guards (the
// issue: 600 connections kept from one address, 1,350 realtime streams
// through one follower filling the leader's bound, a slow body held 400 s,
// /v1//pets answered 307). Every node has --max-conns-per-address 4,
// --max-conns-per-network 6 and --max-conns 16, and names 127.0.0.1, where
// the nodes dial each other from, a proxy: the leader bounds a follower's
// connections by its global bound alone, so what keeps one follower from
// filling it is the follower's own bound on its forwards (its
// --max-conns-per-network).
func TestFollowerIsGuardedLikeTheLeader(t *testing.T) {
	c := startCluster(t, 2, "--max-conns-per-address", "4", "--max-conns-per-network", "6", "--max-conns", "16",
		"--body-timeout", "1s", "--proxy-addresses", "127.0.0.1")
	metricsAddr := freeAddr(t)
	follower := c.nodes[1]
	follower.args = append(follower.args, "--metrics-addr", metricsAddr)
	key := startLeaderAndFollowers(t, c)

	t.Run("connection bounds", func(t *testing.T) {
		hold := func(from string, n int) *idleClient {
			c := &idleClient{t: t, addr: follower.addr, from: from, path: "/healthz"}
			c.hold(n)
			return c
		}
		if c := hold("127.0.1.2", 10); c.served != 4 || c.refused != 6 {
			t.Errorf("10 connections from 127.0.1.2 to the follower: %d held, %d closed at once; want 4 and 6 (--max-conns-per-address)", c.served, c.refused)
		}
		if c := hold("127.0.1.3", 10); c.served != 2 || c.refused != 8 {
			t.Errorf("10 more from 127.0.1.3, in the same /24: %d held, %d closed at once; want 2 and 8 (--max-conns-per-network)", c.served, c.refused)
		}
		// 6 open: 4 from each of two /24s more, then 2 of a third reach 16.
		open := settledOpen(t, metricsAddr)
		for i, from := range []string{"127.0.2.2", "127.0.3.2", "127.0.4.2"} {
			want := min(4, 16-open)
			if c := hold(from, 4); c.served != want {
				t.Errorf("4 connections from %s (%d open before): %d held; want %d", from, open, c.served, want)
			}
			open += want
			if i == 2 && open != 16 {
				t.Fatalf("%d open, want 16 (--max-conns)", open)
			}
		}
		if c := hold("127.0.5.2", 3); c.served != 0 {
			t.Errorf("with 16 connections open, 127.0.5.2 holds %d, want none (--max-conns)", c.served)
		}
		if got := metricValue(t, metricsAddr, "petstore_http_connections_refused_total", "reason=global"); got < 3 {
			t.Errorf("the follower's petstore_http_connections_refused_total{reason=global}: %v, want 3 or more", got)
		}
	})

	t.Run("unclean path", func(t *testing.T) {
		client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodGet, follower.url()+"/v1//pets", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"code":"not_found"`) || !strings.Contains(string(body), "/v1//pets") {
			t.Errorf("GET /v1//pets through the follower: %d %s; want the documented 404 naming the path", resp.StatusCode, body)
		}
	})

	t.Run("slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", follower.addr)
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
			t.Errorf("a slow body through the follower: its connection closed after %v (%v), answered %q; want about 1s (--body-timeout)", took, err, answer)
		}
	})

	t.Run("forwards to the leader", func(t *testing.T) {
		// 8 realtime streams through the follower, 4 from each of two /24s:
		// the follower takes them all, and forwards 6 (its
		// --max-conns-per-network); the 2 others are answered 503.
		var (
			mu      sync.Mutex
			streams int
			refused []string
			wg      sync.WaitGroup
		)
		for i := range 8 {
			wg.Go(func() {
				from := fmt.Sprintf("127.0.%d.2", 6+i%2)
				conn, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).Dial("tcp", follower.addr)
				if err != nil {
					t.Error(err)
					return
				}
				t.Cleanup(func() { conn.Close() })
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(conn, "GET /api/realtime HTTP/1.1\r\nHost: petstore\r\n\r\n"); err != nil {
					t.Error(err)
					return
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Errorf("a realtime stream from %s through the follower: %v", from, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				switch resp.StatusCode {
				case http.StatusOK:
					streams++
				default:
					var e struct{ Code string }
					_ = json.NewDecoder(resp.Body).Decode(&e)
					refused = append(refused, fmt.Sprintf("%d %s Retry-After %q", resp.StatusCode, e.Code, resp.Header.Get("Retry-After")))
				}
			})
		}
		wg.Wait()
		if streams != 6 || len(refused) != 2 {
			t.Fatalf("8 realtime streams through the follower: %d served, refused %v; want 6 served and 2 refused", streams, refused)
		}
		for _, r := range refused {
			if r != `503 not_leader Retry-After "1"` {
				t.Errorf("a stream over the follower's bound: %s; want 503 not_leader with Retry-After 1", r)
			}
		}
	})
}
