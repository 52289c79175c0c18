package realserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/contract"
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

func newClient(t *testing.T, baseURL, key string, rt http.RoundTripper) *client.Petstore {
	t.Helper()
	c, err := client.New(baseURL, key, client.Options{
		HTTPClient: &http.Client{Transport: rt},
		MinBackoff: 50 * time.Millisecond,
		MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countNamed is how many pets have name, walking every page with the client.
func countNamed(t *testing.T, c *client.Petstore, name string) int {
	t.Helper()
	n := 0
	for pet, err := range c.ListPets(context.Background(), client.ListOptions{PageSize: 100}) {
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
	pet, err := c.CreatePet(ctx, client.NewPet{Name: "Lost", CategoryId: 1})
	if err != nil {
		t.Fatalf("create through the lossy proxy: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(upstream) != 2 || upstream[0].status != http.StatusCreated || upstream[1].status != http.StatusCreated ||
		upstream[0].header.Get("Idempotent-Replayed") != "" || upstream[1].header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the server answered %+v; want a 201, then its replay", upstream)
	}
	if got := upstream[1].header.Get("Location"); got != "/v1/pets/"+strconv.FormatInt(pet.Id, 10) {
		t.Fatalf("replayed Location %q for pet %d", got, pet.Id)
	}
	if n := countNamed(t, newClient(t, p.URL+"/v1", key, newRecorder(t)), "Lost"); n != 1 {
		t.Fatalf("%d pets named Lost, want 1", n)
	}
}

// TestRateLimitStormIsWaitedOut drives a free key to its limit, then makes
// three creates and a listing at once. Every 429 has a Retry-After, the
// client never sends again before it has passed, and every call succeeds.
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
	for i := range recs {
		recs[i] = newRecorder(t)
		c := newClient(t, p.URL+"/v1", key, recs[i])
		wg.Go(func() {
			if i == 3 {
				for _, err := range c.ListPets(ctx, client.ListOptions{PageSize: 1}) {
					if err != nil {
						t.Errorf("list: %v", err)
					}
					break
				}
				return
			}
			if _, err := c.CreatePet(ctx, client.NewPet{Name: "Storm", CategoryId: int64(i + 1)}); err != nil {
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()

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

// TestReplayAfterKill: a createPet is answered 201, the server is killed
// with SIGKILL at once and restarted on the same --dir; the same request
// (same Idempotency-Key and body) replays that pet.
func TestReplayAfterKill(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	p := start(t, dir)
	idem := client.NewIdempotencyKey()
	np := client.NewPet{Name: "Survivor", CategoryId: 7}

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
	if !reflect.DeepEqual(again, first) {
		t.Fatalf("after the restart %+v, before %+v", again, first)
	}
	if log := rec.exchanges(); len(log) != 1 || log[0].header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after the restart: %+v, want one replayed answer", log)
	}
	if n := countNamed(t, c, "Survivor"); n != 1 {
		t.Fatalf("%d pets named Survivor, want 1", n)
	}

	// Another body under the key is refused, across the restart too.
	_, err = c.CreatePetWithKey(context.Background(), idem, client.NewPet{Name: "Other", CategoryId: 7})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.ErrorCodeIdempotencyKeyReused {
		t.Fatalf("another body: %v", err)
	}
}
