package goclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// newClient returns a client of s; unless opts has its own HTTPClient, its
// exchanges go through apptest's transport, which checks each one against
// the OpenAPI document.
func newClient(t *testing.T, s *apptest.Server, baseURL, key string, opts client.Options) *client.Client {
	t.Helper()
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: s.Client.Transport}
	}
	c, err := client.New(baseURL, key, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createPets adds n pets named "pet 0".. and returns them by ID.
func createPets(t *testing.T, c *client.Client, n int) map[int64]client.Pet {
	t.Helper()
	created := map[int64]client.Pet{}
	for i := range n {
		np := client.NewPet{Name: fmt.Sprint("pet ", i), CategoryID: int64(i + 1)}
		if i%5 == 0 {
			np.Status = client.Sold
		}
		pet, err := c.CreatePet(context.Background(), np)
		if err != nil {
			t.Fatal(err)
		}
		want := client.Pet{ID: pet.ID, Name: np.Name, CategoryID: np.CategoryID, Status: np.Status}
		if want.Status == "" {
			want.Status = client.Available
		}
		if pet.ID <= 0 || pet.Pet != want {
			t.Fatalf("created %+v from %+v", pet, np)
		}
		created[pet.ID] = pet.Pet
	}
	return created
}

// walk collects a ListPets walk, failing on an error or on a pet out of
// ascending ID order.
func walk(t *testing.T, c *client.Client, opts client.ListOptions) []client.Pet {
	t.Helper()
	var pets []client.Pet
	for pet, err := range c.ListPets(context.Background(), opts) {
		if err != nil {
			t.Fatal(err)
		}
		if n := len(pets); n > 0 && pet.ID <= pets[n-1].ID {
			t.Fatalf("id %d after %d", pet.ID, pets[n-1].ID)
		}
		pets = append(pets, pet)
	}
	return pets
}

// sameAs fails unless listed holds exactly the pets of want.
func sameAs(t *testing.T, listed []client.Pet, want map[int64]client.Pet) {
	t.Helper()
	if len(listed) != len(want) {
		t.Fatalf("listed %d pets, want %d", len(listed), len(want))
	}
	for _, pet := range listed {
		if pet != want[pet.ID] {
			t.Fatalf("listed %+v, created %+v", pet, want[pet.ID])
		}
	}
}

func TestCreateListGet(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()
	created := createPets(t, c, 25)

	sameAs(t, walk(t, c, client.ListOptions{Limit: 7}), created)
	sold := map[int64]client.Pet{}
	for id, pet := range created {
		if pet.Status == client.Sold {
			sold[id] = pet
		}
	}
	sameAs(t, walk(t, c, client.ListOptions{Status: client.Sold, Limit: 2}), sold)

	// Stopping early stops paging.
	for range c.ListPets(ctx, client.ListOptions{Limit: 1}) {
		break
	}

	for id, want := range created {
		got, err := c.GetPet(ctx, id)
		if err != nil || got.Pet != want {
			t.Fatalf("get %d: %+v %v, want %+v", id, got, err, want)
		}
		break
	}
}

// ListPage's cursors walk the same pets as ListPets, and ListPets starts at
// any of them.
func TestListPageCursors(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	created := createPets(t, c, 11)
	all := walk(t, c, client.ListOptions{})

	var paged []client.Pet
	opts := client.ListOptions{Limit: 3}
	var cursors []string
	for {
		page, err := c.ListPage(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Pets) == 0 || len(page.Pets) > 3 {
			t.Fatalf("a page of %d pets with limit 3", len(page.Pets))
		}
		paged = append(paged, page.Pets...)
		if page.Next == "" {
			break
		}
		cursors = append(cursors, page.Next)
		opts.Cursor = page.Next
	}
	sameAs(t, paged, created)
	if len(cursors) != 3 {
		t.Fatalf("%d cursors for 11 pets in pages of 3", len(cursors))
	}
	for i, cursor := range cursors {
		rest := walk(t, c, client.ListOptions{Limit: 3, Cursor: cursor})
		if len(rest) != len(all)-3*(i+1) || rest[0] != all[3*(i+1)] {
			t.Fatalf("from cursor %d: %d pets from %+v", i+1, len(rest), rest[0])
		}
	}
}

// prefixProxy serves the service under /shop/api/v1, as a gateway does. link
// rewrites each Link header the service sends.
func prefixProxy(t *testing.T, s *apptest.Server, link func(publicURL, target string) string) *httptest.Server {
	t.Helper()
	upstream, _ := url.Parse(s.URL)
	var srv *httptest.Server
	srv = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.URL.Path = strings.Replace(r.In.URL.Path, "/shop/api/v1", "/v1", 1)
			r.Out.URL.RawPath = ""
		},
		ModifyResponse: func(resp *http.Response) error {
			if v := resp.Header.Get("Link"); v != "" {
				target, rest, _ := strings.Cut(strings.TrimPrefix(v, "<"), ">")
				resp.Header.Set("Link", "<"+link(srv.URL+"/shop/api/v1", target)+">"+rest)
			}
			return nil
		},
	})
	t.Cleanup(srv.Close)
	return srv
}

// Behind a gateway that maps another path to /v1, the walk reaches every
// pet whether the Link is root-relative as the service writes it without a
// public URL, absolute under the public URL, or absolute on another host
// (which never sees a request, nor the key).
func TestPagingBehindAPathPrefix(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	created := createPets(t, newClient(t, s, s.URL+"/v1", key, client.Options{}), 9)

	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		http.Error(w, "not here", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)

	for name, link := range map[string]func(publicURL, target string) string{
		"root-relative": func(_, target string) string { return target },
		"absolute": func(publicURL, target string) string {
			return publicURL + strings.TrimPrefix(target, "/v1")
		},
		"relative to the page": func(_, target string) string { return "." + strings.TrimPrefix(target, "/v1") },
		"another host":         func(_, target string) string { return other.URL + target },
	} {
		t.Run(name, func(t *testing.T) {
			proxy := prefixProxy(t, s, link)
			c := newClient(t, s, proxy.URL+"/shop/api/v1", key, client.Options{HTTPClient: &http.Client{}})
			sameAs(t, walk(t, c, client.ListOptions{Limit: 2}), created)
		})
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
}

func TestErrorsCarryTheCatalogue(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ctx := context.Background()
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	var e *client.Error

	_, err := c.CreatePet(ctx, client.NewPet{Name: " ", CategoryID: 1})
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != client.CodeInvalidRequest || e.Message == "" {
		t.Fatalf("blank name: %v", err)
	}
	// The error names the request, as the service's log does.
	if len(e.RequestID) != 32 || !strings.HasSuffix(e.Error(), "(request "+e.RequestID+")") {
		t.Errorf("blank name: RequestID %q, %q", e.RequestID, e.Error())
	}
	_, err = c.GetPet(ctx, 100000000000000)
	if !errors.As(err, &e) || e.Code != client.CodeNotFound {
		t.Fatalf("unknown pet: %v", err)
	}
	_, err = c.ListPage(ctx, client.ListOptions{Limit: 101})
	if !errors.As(err, &e) || e.Code != client.CodeInvalidRequest || !strings.Contains(e.Message, "limit") {
		t.Fatalf("limit 101: %v", err)
	}
	_, err = c.ListPage(ctx, client.ListOptions{Cursor: "not a cursor"})
	if !errors.As(err, &e) || e.Code != client.CodeInvalidRequest || !strings.Contains(e.Message, "cursor") {
		t.Fatalf("a bad cursor: %v", err)
	}
	n := 0
	for _, err := range newClient(t, s, s.URL+"/v1", "pet_wrong", client.Options{}).ListPets(ctx, client.ListOptions{}) {
		var le *client.ListError
		if !errors.As(err, &le) || le.Cursor != "" || !errors.As(err, &e) || e.StatusCode != 401 || e.Code != client.CodeUnauthorized {
			t.Fatalf("wrong key: %v", err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("a walk with a wrong key yielded %d times, want one error", n)
	}
	_, err = c.CreatePetWithKey(ctx, "a key", client.NewPet{Name: "Rex", CategoryID: 1})
	if !errors.As(err, &e) || e.Code != client.CodeInvalidRequest {
		t.Fatalf("malformed Idempotency-Key: %v", err)
	}
}

// A reused key with another pet is the service's 422, not retried.
func TestCreatePetWithKeyReplays(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()
	idem := client.NewIdempotencyKey()
	first, err := c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil || again.Pet != first.Pet || first.Answer.Replayed || !again.Answer.Replayed {
		t.Fatalf("retry: %+v %v; first %+v; want the first's pet, told as a replay", again, err, first)
	}
	_, err = c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Tom", CategoryID: 1})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 422 || e.Code != client.CodeIdempotencyKeyReused {
		t.Fatalf("other pet, same key: %v", err)
	}
	if n, _ := s.App.CountRecords("pets"); n != 1 {
		t.Fatalf("%d pets, want 1", n)
	}
}

// checkWindows fails unless rl reports a key's two windows with these
// quotas, the binding one with remaining requests, and resets ahead.
func checkWindows(t *testing.T, rl client.RateLimit, perMinute, perDay, remaining int64) {
	t.Helper()
	now := time.Now()
	if rl.Limit != perMinute || rl.Remaining != remaining || rl.Reset.Before(now.Add(-time.Second)) || rl.Reset.After(now.Add(61*time.Second)) {
		t.Fatalf("rate limit %+v, want %d remaining of %d a minute", rl, remaining, perMinute)
	}
	if len(rl.Windows) != 2 {
		t.Fatalf("windows %+v, want a minute and a day", rl.Windows)
	}
	minute, day := rl.Windows[0], rl.Windows[1]
	if minute.Name != "minute" || minute.Limit != perMinute || minute.Period != time.Minute || minute.Remaining != remaining ||
		minute.Reset.Before(now.Add(-time.Second)) || minute.Reset.After(now.Add(61*time.Second)) {
		t.Fatalf("minute window %+v", minute)
	}
	if day.Name != "day" || day.Limit != perDay || day.Period != 24*time.Hour || day.Remaining != perDay-(perMinute-remaining) ||
		day.Reset.Before(now.Add(-time.Second)) || day.Reset.After(now.Add(24*time.Hour+time.Second)) {
		t.Fatalf("day window %+v", day)
	}
}

// Each call reports the rate-limit state of its answer, counting down:
// with its value, and a walk's where ReportAnswer says.
func TestRateLimitIsReported(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "pro"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()

	pet, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkWindows(t, pet.Answer.RateLimit, 300, 10000, 299)
	got, err := c.GetPet(ctx, pet.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkWindows(t, got.Answer.RateLimit, 300, 10000, 298)
	page, err := c.ListPage(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkWindows(t, page.Answer.RateLimit, 300, 10000, 297)
	var a client.Answer
	for _, err := range c.ListPets(ctx, client.ListOptions{}, client.ReportAnswer(&a)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkWindows(t, a.RateLimit, 300, 10000, 296)

	// A refusal reports it too, in the Error and through ReportAnswer.
	a = client.Answer{}
	_, err = c.CreatePet(ctx, client.NewPet{Name: "", CategoryID: 1}, client.ReportAnswer(&a))
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("blank name: %v", err)
	}
	checkWindows(t, e.RateLimit, 300, 10000, 295)
	checkWindows(t, a.RateLimit, 300, 10000, 295)
}

// A 503 with Retry-After (from a proxy in front of the service) is waited
// for and retried; a 429 whose Retry-After ends after the context's deadline
// is returned at once, with its Retry-After and rate-limit state.
func TestRetryAfterAndDeadline(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 2})
	target, _ := url.Parse(s.URL)
	forward := httputil.NewSingleHostReverseProxy(target)
	var unavailable atomic.Int32
	unavailable.Store(1)
	var sentAt [2]time.Time
	var n atomic.Int32
	proxy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i := n.Add(1) - 1; i < 2 {
			sentAt[i] = time.Now()
		}
		if unavailable.Add(-1) >= 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "down for maintenance")
			return
		}
		forward.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)

	c := newClient(t, s, srv.URL+"/v1", key, client.Options{HTTPClient: &http.Client{}})
	if _, err := c.CreatePet(context.Background(), client.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if waited := sentAt[1].Sub(sentAt[0]); waited < time.Second {
		t.Fatalf("retried %v after a 503 with Retry-After: 1", waited)
	}

	// The key's second request of the minute passes; the third is a 429
	// with a Retry-After of about a minute, beyond the deadline.
	direct := newClient(t, s, s.URL+"/v1", key, client.Options{})
	if _, err := direct.CreatePet(context.Background(), client.NewPet{Name: "Tom", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	_, err := direct.CreatePet(ctx, client.NewPet{Name: "Ada", CategoryID: 1})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != client.CodeRateLimitExceeded || e.RetryAfter <= 5*time.Second {
		t.Fatalf("over the limit: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("returned after %v, want at once", took)
	}
	if rl := e.RateLimit; rl.Limit != 2 || rl.Remaining != 0 || rl.Reset.Before(time.Now().Add(e.RetryAfter-2*time.Second)) {
		t.Fatalf("429's rate limit %+v, Retry-After %v", rl, e.RetryAfter)
	}
}

// OnWait hears of every wait, with its cause: the answer's status and
// Retry-After, or the network error. By default a Retry-After over 10 s
// (DefaultMaxRetryAfter) is not waited for: the call returns the 429 at once
// and reports no wait.
func TestWaitsAreReported(t *testing.T) {
	var answers atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch answers.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"code":"unavailable","message":"Busy.","status":503}`)
		case 2:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":100000000000001,"name":"Rex","categoryId":1,"status":"available"}`)
		default:
			w.Header().Set("Retry-After", fmt.Sprint(int(client.DefaultMaxRetryAfter/time.Second)+1))
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"code":"rate_limit_exceeded","message":"Slow down.","status":429}`)
		}
	}))
	t.Cleanup(site.Close)
	var waits []client.Wait
	opts := client.Options{HTTPClient: &http.Client{}, OnWait: func(w client.Wait) { waits = append(waits, w) }}
	c, err := client.New(site.URL+"/v1", "pet_k", opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	want := client.Wait{Method: "POST", URL: site.URL + "/v1/pets", Attempt: 1, Delay: time.Second, StatusCode: 503, RetryAfter: true}
	if len(waits) != 1 || waits[0] != want {
		t.Fatalf("waits %+v, want [%+v]", waits, want)
	}

	waits = nil
	began := time.Now()
	_, err = c.CreatePet(ctx, client.NewPet{Name: "Tom", CategoryID: 1})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.RetryAfter != client.DefaultMaxRetryAfter+time.Second || len(waits) != 0 || time.Since(began) > time.Second {
		t.Fatalf("a Retry-After over the default bound: %v, waits %+v, after %v; want the 429 at once", err, waits, time.Since(began))
	}

	// No answer: a closed port.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	opts.MaxAttempts, opts.MinBackoff, opts.MaxBackoff = 3, time.Millisecond, 2*time.Millisecond
	c, err = client.New(closed.URL+"/v1", "pet_k", opts)
	if err != nil {
		t.Fatal(err)
	}
	waits = nil
	if _, err := c.ListPage(ctx, client.ListOptions{}); err == nil {
		t.Fatal("a closed port answered")
	}
	if len(waits) != 2 {
		t.Fatalf("%d waits for 3 attempts: %+v", len(waits), waits)
	}
	for i, w := range waits {
		if w.Attempt != i+1 || w.Method != "GET" || !strings.HasPrefix(w.URL, closed.URL+"/v1/pets") || w.StatusCode != 0 || w.Err == nil || w.RetryAfter || w.Delay > 2*time.Millisecond {
			t.Errorf("wait %d: %+v", i, w)
		}
	}
}

func TestNewRefusesMisconfiguration(t *testing.T) {
	for _, tc := range []struct{ baseURL, key, says string }{
		{"http://127.0.0.1:8090", "k", `does not end in /v1; it is the address of the API's version segment, such as http://127.0.0.1:8090/v1`},
		{"http://127.0.0.1:8090/", "k", "such as http://127.0.0.1:8090/v1"},
		{"https://shop.example.org/api", "k", "such as https://shop.example.org/api/v1"},
		{"http://127.0.0.1:8090/v1/pets", "k", "does not end in /v1; it is the address of the API's version segment, such as http://127.0.0.1:8090/v1"},
		{"http://127.0.0.1:8090/v2", "k", "does not end in /v1"},
		{"http://127.0.0.1:8090/v1?x=1", "k", "has a query or a fragment; it is the address of the API's version segment, such as http://127.0.0.1:8090/v1"},
		{"http://127.0.0.1:8090/v1#top", "k", "has a query or a fragment"},
		{"/v1", "k", "not an absolute http(s) URL"},
		{"127.0.0.1:8090/v1", "k", "not an absolute http(s) URL"},
		{"ftp://127.0.0.1/v1", "k", "not an absolute http(s) URL"},
		{"http://127.0.0.1:8090/v1", "", "API key is empty"},
	} {
		c, err := client.New(tc.baseURL, tc.key, client.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New(%q, %q) = %v, %v; want an error saying %q", tc.baseURL, tc.key, c, err, tc.says)
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8090/v1", "http://127.0.0.1:8090/v1/", "https://shop.example.org/api/v1"} {
		if _, err := client.New(ok, "k", client.Options{}); err != nil {
			t.Errorf("New(%q): %v", ok, err)
		}
	}
}

// Answers that are not the API's say so, and name the base URL when it is
// the likely cause.
func TestAnswersThatAreNotTheAPIs(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ctx := context.Background()
	var e *client.Error

	// PocketBase's own API is under /api: its 404 is not an Error body.
	base := s.URL + "/api/v1"
	_, err := newClient(t, s, base, key, client.Options{}).ListPage(ctx, client.ListOptions{})
	if !errors.As(err, &e) || e.StatusCode != 404 || e.Code != "" ||
		!strings.Contains(e.Message, "not the API's JSON") || !strings.Contains(e.Message, "is "+base+" the API's base URL?") {
		t.Fatalf("a PocketBase 404: %v", err)
	}
	// A POST there is PocketBase's 405, which asks the same.
	_, err = newClient(t, s, base, key, client.Options{}).CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
	if !errors.As(err, &e) || e.StatusCode != 405 || e.Code != "" || !strings.Contains(e.Message, "is "+base+" the API's base URL?") {
		t.Fatalf("a PocketBase 405: %v", err)
	}

	// A web site: 200 with a page.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html>\n<title>Welcome</title>")
	}))
	t.Cleanup(site.Close)
	c := newClient(t, s, site.URL+"/v1", key, client.Options{HTTPClient: &http.Client{}})
	_, err = c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
	if !errors.As(err, &e) || e.StatusCode != 200 || e.Code != "" ||
		e.Error() != `petstore: POST `+site.URL+`/v1/pets answered 200 OK (text/html; charset=utf-8), which is not the API's JSON: <!doctype html> <title>Welcome</title>; is `+site.URL+`/v1 the API's base URL?` {
		t.Fatalf("a web page: %v", err)
	}

	// JSON of another shape.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"items": []}`)
	}))
	t.Cleanup(other.Close)
	_, err = newClient(t, s, other.URL+"/v1", key, client.Options{HTTPClient: &http.Client{}}).ListPage(ctx, client.ListOptions{})
	if !errors.As(err, &e) || e.Code != "" || !strings.Contains(e.Message, "not the API's JSON") {
		t.Fatalf("JSON of another shape: %v", err)
	}

	// A gateway's 502 page is not about the base URL.
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	t.Cleanup(gateway.Close)
	_, err = newClient(t, s, gateway.URL+"/v1", key, client.Options{HTTPClient: &http.Client{}}).ListPage(ctx, client.ListOptions{})
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Code != "" || !strings.HasSuffix(e.Message, ": upstream connect error") {
		t.Fatalf("a gateway's 502: %v", err)
	}
}
