package webhooks_test

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/webhooks"
)

func post(t *testing.T, c *webhooks.Client, ctx context.Context, raw string, limit int) (int, string, error) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	status, answer, err := c.Post(ctx, u, http.Header{"Content-Type": {"application/json"}, "Webhook-Id": {"msg_1"}}, `{"n":1}`, limit)
	return status, string(answer), err
}

// Deliveries one after the other share one connection; the endpoint gets
// the body and headers, the caller the status and the answer's first
// bytes. An answer longer than the limit is cut, and its connection, not
// read to its end, is not used again.
func TestClientKeepsOneConnection(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"n":1}` || r.Header.Get("Webhook-Id") != "msg_1" || r.Method != http.MethodPost {
			t.Errorf("got %s %s %v", r.Method, body, r.Header)
		}
		if r.URL.Query().Get("long") != "" {
			_, _ = io.WriteString(w, strings.Repeat("x", 5000))
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "thanks")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer c.Close()
	for range 20 {
		status, answer, err := post(t, c, context.Background(), srv.URL+"/hook", 1024)
		if err != nil || status != http.StatusAccepted || answer != "thanks" {
			t.Fatalf("post: %d %q %v", status, answer, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 20 deliveries, want 1", n)
	}
	status, answer, err := post(t, c, context.Background(), srv.URL+"/hook?long=1", 1024)
	if err != nil || status != http.StatusOK || answer != strings.Repeat("x", 1024) {
		t.Fatalf("long answer: %d %d bytes %v", status, len(answer), err)
	}
	if _, _, err := post(t, c, context.Background(), srv.URL+"/hook", 1024); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the long answer's is closed", n)
	}
}

// An endpoint may close an idle connection without a word: the next
// delivery finds it gone before any answer, and is sent again, once, on a
// new connection. The endpoint gets it once.
func TestClientResendsOnAConnectionClosedWhileIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted, requests atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close() // after one answer, as if idle too long
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				requests.Add(1)
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	c := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer c.Close()
	for i := range 3 {
		status, answer, err := post(t, c, context.Background(), "http://"+ln.Addr().String()+"/", 1024)
		if err != nil || status != http.StatusOK || answer != "ok" {
			t.Fatalf("delivery %d: %d %q %v", i, status, answer, err)
		}
		time.Sleep(20 * time.Millisecond) // the close arrives
	}
	if accepted.Load() != 3 || requests.Load() != 3 {
		t.Errorf("%d connections, %d requests, want 3 of each", accepted.Load(), requests.Load())
	}
}

// An https endpoint gets its deliveries over one TLS connection, its
// certificate checked against the endpoint's name.
func TestClientOverTLS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "secure thanks")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	untrusting := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer untrusting.Close()
	if status, _, err := post(t, untrusting, context.Background(), srv.URL, 1024); err == nil {
		t.Fatalf("a certificate no root signs: answered %d", status)
	}
	c := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer c.Close()
	webhooks.TrustRoots(c, roots)
	for range 3 {
		status, answer, err := post(t, c, context.Background(), srv.URL+"/hook", 1024)
		if err != nil || status != http.StatusOK || answer != "secure thanks" {
			t.Fatalf("post: %d %q %v", status, answer, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the refused one and one for 3 deliveries", n)
	}
}

// The deliverer's stop ends an exchange under way at once.
func TestClientStopsWithItsContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	c := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	began := time.Now()
	status, _, err := post(t, c, ctx, srv.URL, 1024)
	if !errors.Is(err, context.Canceled) || status != 0 {
		t.Errorf("%d %v, want the context's end", status, err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// A receiver that answers "HTTP/1.1 200 OK" and then one endless header
// line (1 GiB of it) costs the sender no more than the head's limit: the
// attempt fails with that reason, the process's heap stays under 100 MB
// all along, and the connection is dropped, so the next delivery opens
// another.
func TestClientBoundsTheAnswersHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted, written atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if n > 1 {
						_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Endless: ")
					chunk := []byte(strings.Repeat("a", 64<<10))
					for range (1 << 30) / len(chunk) {
						m, err := conn.Write(chunk)
						written.Add(int64(m))
						if err != nil {
							return
						}
					}
					return
				}
			}()
		}
	}()

	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	c := webhooks.NewClient(webhooks.Targets{AllowPrivate: true})
	defer c.Close()
	began := time.Now()
	status, _, err := post(t, c, context.Background(), "http://"+ln.Addr().String()+"/", 1024)
	took := time.Since(began)
	close(stop)
	<-sampled
	if !errors.Is(err, webhooks.ErrAnswerHeadTooLong) || status != 0 ||
		err.Error() != "the answer's status line and headers are longer than 64 KiB" {
		t.Errorf("%d %v, want the head's limit as the reason", status, err)
	}
	if p := peak.Load(); p > 100<<20 {
		t.Errorf("heap in use peaked at %d MB, want under 100 MB", p>>20)
	}
	t.Logf("failed after %v; the receiver wrote %d KiB; heap in use peaked at %d MB", took, written.Load()>>10, peak.Load()>>20)

	status, answer, err := post(t, c, context.Background(), "http://"+ln.Addr().String()+"/", 1024)
	if err != nil || status != http.StatusOK || answer != "ok" {
		t.Fatalf("the next delivery: %d %q %v", status, answer, err)
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the endless answer's is dropped", n)
	}
}
