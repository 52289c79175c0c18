package realserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/client"
	"petstore/testkit/contract"
)

// exchange is one attempt as the client's transport saw it.
type exchange struct {
	method, path   string
	sent, received time.Time
	status         int // 0: a transport error
	header         http.Header
}

// recorder is the transport under package client's retries: it records
// every attempt, and checks each /v1 exchange against the OpenAPI document.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []exchange
}

func newRecorder(t *testing.T) *recorder {
	return &recorder{next: contract.NewTransport(t, &http.Transport{})}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	x := exchange{method: req.Method, path: req.URL.Path, sent: time.Now()}
	resp, err := r.next.RoundTrip(req)
	x.received = time.Now()
	if err == nil {
		x.status, x.header = resp.StatusCode, resp.Header
	}
	r.mu.Lock()
	r.log = append(r.log, x)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.log...)
}

func newClient(t *testing.T, baseURL, key string, rt http.RoundTripper) *client.Client {
	t.Helper()
	return newClientWaiting(t, baseURL, key, rt, 0)
}

// newClientWaiting is newClient waiting out a Retry-After of up to
// maxRetryAfter (0: the client's default).
func newClientWaiting(t *testing.T, baseURL, key string, rt http.RoundTripper, maxRetryAfter time.Duration) *client.Client {
	t.Helper()
	c, err := client.New(baseURL, key, client.Options{
		HTTPClient:    &http.Client{Transport: rt},
		MinBackoff:    50 * time.Millisecond,
		MaxBackoff:    time.Second,
		MaxRetryAfter: maxRetryAfter,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countNamed is how many pets have name, walking every page with the client.
func countNamed(t *testing.T, c *client.Client, name string) int {
	t.Helper()
	n := 0
	for pet, err := range c.ListPets(context.Background(), client.ListOptions{Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		if pet.Name == name {
			n++
		}
	}
	return n
}

// TestLostCreateResponseIsRetriedOnce puts a loopback proxy between the
// client and the binary. The proxy forwards the first createPet, reads the
// server's whole 201, and then closes the client's connection without a
// byte of it. The client retries with the same Idempotency-Key and gets the
// pet the first attempt made: exactly one pet has the name.
func TestLostCreateResponseIsRetriedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	p := start(t, dir)

	var (
		mu       sync.Mutex
		dropped  bool
		upstream []exchange // what the server answered, as the proxy saw it
	)
	forward := &http.Transport{}
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.RequestURI, out.URL.Scheme, out.URL.Host = "", "http", p.Addr
		resp, err := forward.RoundTrip(out)
		if err != nil {
			t.Errorf("proxy: %v", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Errorf("proxy: %v", err)
		}
		mu.Lock()
		upstream = append(upstream, exchange{method: r.Method, path: r.URL.Path, status: resp.StatusCode, header: resp.Header})
		drop := r.Method == http.MethodPost && !dropped
		dropped = dropped || drop
		mu.Unlock()
		if drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("proxy: hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	rec := newRecorder(t)
	c := newClient(t, srv.URL+"/v1", key, rec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pet, err := c.CreatePet(ctx, client.NewPet{Name: "Lost", CategoryID: 1})
	if err != nil {
		t.Fatalf("create through the lossy proxy: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(upstream) != 2 || upstream[0].status != http.StatusCreated || upstream[1].status != http.StatusCreated ||
		upstream[0].header.Get("Idempotent-Replayed") != "" || upstream[1].header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the server answered %+v; want a 201, then its replay", upstream)
	}
	if got := upstream[1].header.Get("Location"); got != "/v1/pets/"+strconv.FormatInt(pet.ID, 10) {
		t.Fatalf("replayed Location %q for pet %d", got, pet.ID)
	}
	if n := countNamed(t, newClient(t, p.URL+"/v1", key, newRecorder(t)), "Lost"); n != 1 {
		t.Fatalf("%d pets named Lost, want 1", n)
	}
}

// TestRateLimitStormIsWaitedOut drives a free key to its limit, then makes
// three creates and a listing at once with clients that wait out a minute
// (MaxRetryAfter 61 s, as a batch job sets it). Every 429 has a Retry-After,
// the client never sends again before it has passed, every call succeeds,
// and each reports the rate-limit state of its successful answer.
func TestRateLimitStormIsWaitedOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "free")
	p := start(t, dir)
	for i := 0; ; i++ {
		status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets?limit=1", key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusTooManyRequests {
			break
		}
		if status != http.StatusOK || i > 60 {
			t.Fatalf("request %d: %d %s", i+1, status, body)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	recs := make([]*recorder, 4)
	answers := make([]client.Answer, len(recs))
	for i := range recs {
		recs[i] = newRecorder(t)
		c := newClientWaiting(t, p.URL+"/v1", key, recs[i], 61*time.Second)
		wg.Go(func() {
			if i == 3 {
				for _, err := range c.ListPets(ctx, client.ListOptions{Limit: 1}, client.ReportAnswer(&answers[i])) {
					if err != nil {
						t.Errorf("list: %v", err)
					}
					break
				}
				return
			}
			created, err := c.CreatePet(ctx, client.NewPet{Name: "Storm", CategoryID: int64(i + 1)})
			if err != nil {
				t.Errorf("create %d: %v", i, err)
			}
			answers[i] = created.Answer
		})
	}
	wg.Wait()
	for i, a := range answers {
		rl := a.RateLimit
		// The successful answer came in a new minute window: it and at most
		// the other three calls' count in it.
		if rl.Limit != 60 || rl.Remaining < 60-4 || rl.Remaining > 60-1 || len(rl.Windows) != 2 ||
			rl.Windows[0].Name != "minute" || rl.Windows[0].Limit != 60 || rl.Windows[0].Period != time.Minute ||
			rl.Windows[1].Name != "day" || rl.Windows[1].Limit != 1000 || rl.Windows[1].Period != 24*time.Hour ||
			rl.Windows[1].Remaining >= rl.Windows[0].Remaining+1000-60 {
			t.Errorf("call %d: rate limit %+v", i, rl)
		}
	}

	limited := 0
	for i, rec := range recs {
		log := rec.exchanges()
		for j, x := range log {
			if x.status != http.StatusTooManyRequests {
				continue
			}
			limited++
			after, err := strconv.Atoi(x.header.Get("Retry-After"))
			if err != nil || after < 1 {
				t.Fatalf("call %d: a 429 with Retry-After %q", i, x.header.Get("Retry-After"))
			}
			if j+1 == len(log) {
				t.Fatalf("call %d: ended on a 429", i)
			}
			if waited := log[j+1].sent.Sub(x.received); waited < time.Duration(after)*time.Second {
				t.Fatalf("call %d: sent again %v after a 429 with Retry-After: %d", i, waited, after)
			}
			t.Logf("call %d: 429 with Retry-After %d s, sent again after %v", i, after, log[j+1].sent.Sub(x.received).Round(time.Millisecond))
		}
		if last := log[len(log)-1]; last.status != http.StatusCreated && last.status != http.StatusOK {
			t.Fatalf("call %d: last answer %d", i, last.status)
		}
	}
	if limited < len(recs) {
		t.Fatalf("%d 429s for %d calls made over the limit", limited, len(recs))
	}
}

// TestWalkResumesFromItsCursor walks the pets through a reverse proxy that
// fails the third page with a 502 (the walk makes one attempt a page, so
// that the client does not retry it): the
// walk stops with a *ListError, more pets are added, and a walk from the
// error's cursor yields the rest, so that every pet that existed when the
// walk began comes once and no pet twice. Every page reports the key's
// rate-limit state, counting down.
func TestWalkResumesFromItsCursor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "pro")
	p := start(t, dir)
	ctx := context.Background()
	seed := newClient(t, p.URL+"/v1", key, newRecorder(t))
	before := map[int64]bool{}
	for i := range 10 {
		pet, err := seed.CreatePet(ctx, client.NewPet{Name: fmt.Sprint("Walker ", i), CategoryID: 1})
		if err != nil {
			t.Fatal(err)
		}
		before[pet.ID] = true
	}

	// The proxy's exchanges with the server are checked against the
	// document; its own 502 is not the API's, and is not.
	upstream, _ := url.Parse(p.URL)
	checked := contract.NewTransport(t, &http.Transport{})
	var pages atomic.Int32
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
		Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Path == "/v1/pets" && pages.Add(1) == 3 {
				return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{"Content-Type": {"text/html"}},
					Body: io.NopCloser(strings.NewReader("<h1>502 Bad Gateway</h1>")), Request: req}, nil
			}
			return checked.RoundTrip(req)
		}),
	})
	t.Cleanup(proxy.Close)
	c := newClient(t, proxy.URL+"/v1", key, &http.Transport{})

	seen := map[int64]int{}
	var a client.Answer
	// walk walks from opts, checking that each page reports one request
	// fewer remaining than the one before.
	walk := func(opts client.ListOptions) error {
		remaining := int64(300)
		for pet, err := range c.ListPets(ctx, opts, client.ReportAnswer(&a), client.WithMaxAttempts(1)) {
			if err != nil {
				return err
			}
			rl := a.RateLimit
			seen[pet.ID]++
			if rl.Limit != 300 || rl.Remaining > remaining || len(rl.Windows) != 2 || rl.Windows[1].Name != "day" || rl.Windows[1].Limit != 10000 {
				t.Fatalf("after pet %d: rate limit %+v, want at most %d of 300 remaining", len(seen), rl, remaining)
			}
			if rl.Remaining < remaining-1 && remaining != 300 {
				t.Fatalf("after pet %d: %d remaining after %d: a page counted twice", len(seen), rl.Remaining, remaining)
			}
			remaining = rl.Remaining
		}
		return nil
	}
	err := walk(client.ListOptions{Limit: 3})
	var stopped *client.ListError
	var e *client.Error
	if !errors.As(err, &stopped) || stopped.Cursor == "" || !errors.As(err, &e) || e.StatusCode != http.StatusBadGateway || e.Code != "" {
		t.Fatalf("the walk ended with %v; want a ListError with a cursor around the proxy's 502", err)
	}
	if e.RateLimit.Limit != 0 || a.RateLimit.Limit != 0 {
		t.Fatalf("the proxy's 502 reported a rate limit: %+v, %+v", e.RateLimit, a.RateLimit)
	}
	if len(seen) != 6 {
		t.Fatalf("%d pets before the failed third page of 3", len(seen))
	}

	for i := range 3 { // added between the failure and the resumption
		if _, err := seed.CreatePet(ctx, client.NewPet{Name: fmt.Sprint("Latecomer ", i), CategoryID: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := walk(client.ListOptions{Limit: 3, Cursor: stopped.Cursor}); err != nil {
		t.Fatalf("resumed from %q: %v", stopped.Cursor, err)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("pet %d came %d times", id, n)
		}
	}
	for id := range before {
		if seen[id] != 1 {
			t.Fatalf("pet %d was missed", id)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestReplayAfterKill: a createPet is answered 201, the server is killed
// with SIGKILL at once and restarted on the same --dir; the same request
// (same Idempotency-Key and body) replays that pet.
func TestReplayAfterKill(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	p := start(t, dir)
	idem := client.NewIdempotencyKey()
	np := client.NewPet{Name: "Survivor", CategoryID: 7}

	first, err := newClient(t, p.URL+"/v1", key, newRecorder(t)).CreatePetWithKey(context.Background(), idem, np)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()

	p = start(t, dir)
	rec := newRecorder(t)
	c := newClient(t, p.URL+"/v1", key, rec)
	again, err := c.CreatePetWithKey(context.Background(), idem, np)
	if err != nil {
		t.Fatal(err)
	}
	if again.Pet != first.Pet || first.Answer.Replayed || !again.Answer.Replayed {
		t.Fatalf("after the restart %+v (replayed %v), before %+v (replayed %v); want the same pet, told as a replay",
			again.Pet, again.Answer.Replayed, first.Pet, first.Answer.Replayed)
	}
	if log := rec.exchanges(); len(log) != 1 || log[0].header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after the restart: %+v, want one replayed answer", log)
	}
	if n := countNamed(t, c, "Survivor"); n != 1 {
		t.Fatalf("%d pets named Survivor, want 1", n)
	}

	// Another body under the key is refused, across the restart too.
	_, err = c.CreatePetWithKey(context.Background(), idem, client.NewPet{Name: "Other", CategoryID: 7})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeIdempotencyKeyReused {
		t.Fatalf("another body: %v", err)
	}
}
