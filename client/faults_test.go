package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The client's own tests run it against servers that misbehave, started
// here on loopback; testkit/goclient (in the server's module) runs it
// against the real service.

func newTestClient(t *testing.T, url string, opts Options) *Client {
	t.Helper()
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond
	}
	c, err := New(url+"/v1", "pet_test", opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTimeoutsHaveDefaults(t *testing.T) {
	p := newPolicy(Options{})
	if p.attemptTimeout != DefaultAttemptTimeout || p.timeout != DefaultTimeout || DefaultAttemptTimeout != 30*time.Second || DefaultTimeout != 80*time.Second {
		t.Errorf("default attempt timeout %v, call timeout %v; want 30 s and 80 s", p.attemptTimeout, p.timeout)
	}
	cfg := (&Client{policy: p}).config([]CallOption{WithTimeout(time.Second), WithAttemptTimeout(-1), WithMaxAttempts(2)})
	if cfg.policy.timeout != time.Second || cfg.policy.attemptTimeout != -1 || cfg.policy.maxAttempts != 2 {
		t.Errorf("per-call overrides: %+v", cfg.policy)
	}
}

// A server that accepts and never answers: each attempt ends at its
// timeout and is retried, the call ends with a *TimeoutError naming its
// attempts; with a call timeout shorter than the attempts', at that.
func TestAServerThatNeverAnswersTimesOut(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	var heard []Attempt
	c := newTestClient(t, srv.URL, Options{AttemptTimeout: 100 * time.Millisecond, MaxAttempts: 3,
		OnAttempt: func(a Attempt) { heard = append(heard, a) }})
	start := time.Now()
	_, err := c.GetPet(context.Background(), 1)
	elapsed := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || !te.Attempt || te.Attempts != 3 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetPet: %v (%T), want a *TimeoutError of the last of 3 attempts", err, err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("three attempts of 100 ms took %v", elapsed)
	}
	if len(heard) != 3 || heard[2].Attempt != 3 || heard[2].StatusCode != 0 || heard[2].Err == nil {
		t.Errorf("OnAttempt heard %+v", heard)
	}
	mu.Lock()
	if attempts != 3 {
		t.Errorf("the server saw %d attempts, want 3", attempts)
	}
	mu.Unlock()

	// The call's own deadline, per call: one attempt under way when it
	// passes.
	start = time.Now()
	_, err = c.GetPet(context.Background(), 1, WithTimeout(150*time.Millisecond), WithAttemptTimeout(time.Minute))
	elapsed = time.Since(start)
	if !errors.As(err, &te) || te.Attempt || te.Attempts != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetPet with a 150 ms call timeout: %v, want a *TimeoutError of the call after 1 attempt", err)
	}
	if elapsed < 150*time.Millisecond || elapsed > time.Second {
		t.Errorf("a 150 ms call took %v", elapsed)
	}

	// A caller's cancellation is the caller's: its error, as it is.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.GetPet(ctx, 1); err != context.Canceled {
		t.Errorf("GetPet cancelled by its caller: %v, want context.Canceled", err)
	}
}

// resettingServer answers its first connection with a 503 (Request-Id
// first-503, Retry-After 0) and resets every later one after reading the
// request: no answer at all.
func resettingServer(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	conns := 0
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns++
			n := conns
			mu.Unlock()
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
				conn.Close()
				continue
			}
			if n == 1 {
				fmt.Fprint(conn, "HTTP/1.1 503 Service Unavailable\r\nRequest-Id: first-503\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			} else {
				_ = conn.(*net.TCPConn).SetLinger(0) // close with a reset
			}
			conn.Close()
		}
	}()
	return "http://" + ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return conns }
}

// A server that resets: the attempts are retried, and the call ends with a
// *NetworkError naming its attempts and the last request id it saw.
func TestAServerThatResetsGivesANetworkError(t *testing.T) {
	url, conns := resettingServer(t)
	var waits []Wait
	c := newTestClient(t, url, Options{MaxAttempts: 3, OnWait: func(w Wait) { waits = append(waits, w) }})
	_, err := c.CreatePet(context.Background(), NewPet{Name: "Rex", CategoryID: 1})
	var ne *NetworkError
	if !errors.As(err, &ne) || ne.Attempts != 3 || ne.RequestID != "first-503" || ne.Method != http.MethodPost || ne.Err == nil {
		t.Fatalf("CreatePet: %v (%T), want a *NetworkError after 3 attempts naming request first-503", err, err)
	}
	if !strings.Contains(err.Error(), "no answer after 3 attempts") || !strings.Contains(err.Error(), "first-503") {
		t.Errorf("message: %s", err)
	}
	if conns() != 3 || len(waits) != 2 || waits[0].StatusCode != http.StatusServiceUnavailable || !waits[0].RetryAfter || waits[1].Err == nil {
		t.Errorf("%d connections, waits %+v; want 3, a Retry-After then a network error", conns(), waits)
	}
}

// A POST without an Idempotency-Key is not retried, whatever happened to
// it: the service may have done the work.
func TestAPostWithoutAKeyIsNotRetried(t *testing.T) {
	url, conns := resettingServer(t)
	c := newTestClient(t, url, Options{})
	var out Pet
	_, a, err := c.do(context.Background(), http.MethodPost, "pets", nil, NewPet{Name: "Rex", CategoryID: 1}, nil,
		http.StatusCreated, &out, func() bool { return true }, nil)
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable || e.Attempts != 1 || a.Attempts != 1 || conns() != 1 {
		t.Fatalf("a POST without a key: %v after %d connections, want its 503 after one attempt", err, conns())
	}
	if e.Header.Get("Request-Id") != "first-503" || e.RequestID != "first-503" {
		t.Errorf("the error's headers %v", e.Header)
	}
}

// A gateway's 502, then the service's 201: the create is retried with the
// same Idempotency-Key, and the caller learns the answer's request id,
// replay and rate-limit state with the pet; every attempt names the client
// and carries the call's own header.
func TestA502Then201IsRetriedWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys, agents, extras []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		agents = append(agents, r.Header.Get("User-Agent"))
		extras = append(extras, r.Header.Get("X-Trace"))
		n := len(keys)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<h1>502 Bad Gateway</h1>")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Request-Id", "the-201")
		h.Set("Idempotent-Replayed", "true")
		h.Set("X-RateLimit-Limit", "300")
		h.Set("X-RateLimit-Remaining", "297")
		h.Set("X-RateLimit-Reset", "2000000000")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":100000000000001,"name":"Rex","categoryId":1,"status":"available"}`)
	}))
	t.Cleanup(srv.Close)
	var statuses []int
	c := newTestClient(t, srv.URL, Options{UserAgent: "shop/2", OnAttempt: func(a Attempt) { statuses = append(statuses, a.StatusCode) }})
	pet, err := c.CreatePet(context.Background(), NewPet{Name: "Rex", CategoryID: 1}, WithHeader("X-Trace", "t1"))
	if err != nil || pet.ID != 100000000000001 {
		t.Fatalf("CreatePet: %+v, %v", pet, err)
	}
	if a := pet.Answer; a.Attempts != 2 || a.RequestID != "the-201" || !a.Replayed || a.RateLimit.Remaining != 297 || a.StatusCode != http.StatusCreated || a.Header.Get("Request-Id") != "the-201" {
		t.Errorf("the answer: %+v", a)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("Idempotency-Keys %q, want one key twice", keys)
	}
	if want := "shop/2 petstore-go/" + Version; agents[0] != want || agents[1] != want {
		t.Errorf("User-Agents %q, want %q", agents, want)
	}
	if extras[0] != "t1" || extras[1] != "t1" {
		t.Errorf("X-Trace %q", extras)
	}
	if len(statuses) != 2 || statuses[0] != http.StatusBadGateway || statuses[1] != http.StatusCreated {
		t.Errorf("OnAttempt heard %v", statuses)
	}
}

// 429, 500, 502, 503 and 504 are retried on reads, after Retry-After when
// the answer has one; a 400 is not.
func TestRetriedStatuses(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusBadRequest} {
		var mu sync.Mutex
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"code":"x","message":"m","status":%d}`, status)
				return
			}
			fmt.Fprint(w, `{"id":1,"name":"Rex","categoryId":1,"status":"sold"}`)
		}))
		c := newTestClient(t, srv.URL, Options{})
		start := time.Now()
		_, err := c.GetPet(context.Background(), 1)
		elapsed := time.Since(start)
		srv.Close()
		if status == http.StatusBadRequest {
			var e *Error
			if !errors.As(err, &e) || calls != 1 || e.Header.Get("Retry-After") != "1" {
				t.Errorf("a 400: %v after %d calls, want the *Error at once with its headers", err, calls)
			}
			continue
		}
		if err != nil || calls != 2 || elapsed < time.Second {
			t.Errorf("a %d with Retry-After: 1: %v after %d calls in %v, want a success after a second", status, err, calls, elapsed)
		}
	}
}

// The service's 500, then its 201: a create with an Idempotency-Key is
// retried with the same key (the service stores no 500 for a key, so the
// retry does the work once), and the pet comes with its answer; the same
// 500 on a POST without a key is the caller's.
func TestA500Then201IsRetriedWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n%2 == 1 {
			w.Header().Set("Request-Id", "the-500")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"code":"internal_error","message":"Something went wrong on our side.","status":500}`)
			return
		}
		w.Header().Set("Request-Id", "the-201")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":100000000000002,"name":"Rex","categoryId":1,"status":"available"}`)
	}))
	t.Cleanup(srv.Close)
	var waits []Wait
	c := newTestClient(t, srv.URL, Options{OnWait: func(w Wait) { waits = append(waits, w) }})
	pet, err := c.CreatePet(context.Background(), NewPet{Name: "Rex", CategoryID: 1})
	if err != nil || pet.ID != 100000000000002 || pet.Answer.Attempts != 2 || pet.Answer.RequestID != "the-201" {
		t.Fatalf("CreatePet after a 500: %+v, %v; want the pet of the second attempt", pet, err)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("Idempotency-Keys %q, want one key twice", keys)
	}
	if len(waits) != 1 || waits[0].StatusCode != http.StatusInternalServerError {
		t.Errorf("waits %+v, want one after the 500", waits)
	}

	var out Pet
	_, _, err = c.do(context.Background(), http.MethodPost, "pets", nil, NewPet{Name: "Rex", CategoryID: 1}, nil,
		http.StatusCreated, &out, func() bool { return true }, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternalError || e.Attempts != 1 || len(keys) != 3 {
		t.Errorf("a POST without a key: %v after %d requests, want its 500 after one attempt", err, len(keys))
	}
}

// A result encodes to JSON as its value alone: its Answer is the call's,
// not the pet's.
func TestResultsEncodeAsTheirValue(t *testing.T) {
	pet := Pet{ID: 100000000000003, Name: "Rex", CategoryID: 1, Status: Sold}
	answer := Answer{StatusCode: http.StatusCreated, RequestID: "r1", Header: http.Header{"Request-Id": {"r1"}}}
	for _, v := range []struct{ result, value any }{
		{PetResult{Pet: pet, Answer: answer}, pet},
		{UsageResult{Usage: Usage{Plan: "free", Days: []UsageDay{{Day: "2026-12-08"}}}, Answer: answer}, Usage{Plan: "free", Days: []UsageDay{{Day: "2026-12-08"}}}},
	} {
		got, err1 := json.Marshal(v.result)
		want, err2 := json.Marshal(v.value)
		if err1 != nil || err2 != nil || string(got) != string(want) {
			t.Errorf("%T encodes as %s (%v), its value as %s (%v)", v.result, got, err1, want, err2)
		}
	}
}
