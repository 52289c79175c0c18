package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/internal/apptest"
)

// newClient returns a client of s; unless opts has its own HTTPClient, its
// exchanges go through apptest's transport, which checks each one against
// the OpenAPI document.
func newClient(t *testing.T, s *apptest.Server, baseURL, key string, opts client.Options) *client.Petstore {
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

func TestCreateListGet(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	c := newClient(t, s, s.URL+"/v1", key, client.Options{})
	ctx := context.Background()

	sold := client.Sold
	created := map[int64]client.Pet{}
	for i := range 25 {
		np := client.NewPet{Name: fmt.Sprint("pet ", i), CategoryId: int64(i + 1)}
		if i%5 == 0 {
			np.Status = &sold
		}
		pet, err := c.CreatePet(ctx, np)
		if err != nil {
			t.Fatal(err)
		}
		if pet.Name != np.Name || pet.CategoryId != np.CategoryId || pet.Status == nil {
			t.Fatalf("created %+v from %+v", pet, np)
		}
		created[pet.Id] = pet
	}

	// Every pet once, in ascending id order, through pages of 7.
	var last int64
	seen := 0
	for pet, err := range c.ListPets(ctx, client.ListOptions{PageSize: 7}) {
		if err != nil {
			t.Fatal(err)
		}
		if pet.Id <= last {
			t.Fatalf("id %d after %d", pet.Id, last)
		}
		last = pet.Id
		if want := created[pet.Id]; pet.Name != want.Name || *pet.Status != *want.Status {
			t.Fatalf("listed %+v, created %+v", pet, want)
		}
		seen++
	}
	if seen != len(created) {
		t.Fatalf("listed %d pets, created %d", seen, len(created))
	}

	seen = 0
	for pet, err := range c.ListPets(ctx, client.ListOptions{Status: client.Sold, PageSize: 2}) {
		if err != nil || *pet.Status != client.Sold {
			t.Fatalf("%+v %v", pet, err)
		}
		seen++
	}
	if seen != 5 {
		t.Fatalf("listed %d sold pets, want 5", seen)
	}

	// Stopping early stops paging.
	for range c.ListPets(ctx, client.ListOptions{PageSize: 1}) {
		break
	}

	for id, want := range created {
		got, err := c.GetPet(ctx, id)
		if err != nil || got.Name != want.Name {
			t.Fatalf("get %d: %+v %v", id, got, err)
		}
		break
	}
}

func TestErrorsCarryTheCatalogue(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ctx := context.Background()
	var e *client.Error

	_, err := newClient(t, s, s.URL+"/v1", key, client.Options{}).CreatePet(ctx, client.NewPet{Name: " ", CategoryId: 1})
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != client.ErrorCodeInvalidRequest || e.Message == "" {
		t.Fatalf("blank name: %v", err)
	}
	_, err = newClient(t, s, s.URL+"/v1", key, client.Options{}).GetPet(ctx, 100000000000000)
	if !errors.As(err, &e) || e.Code != client.ErrorCodeNotFound {
		t.Fatalf("unknown pet: %v", err)
	}
	for _, err := range newClient(t, s, s.URL+"/v1", "pet_wrong", client.Options{}).ListPets(ctx, client.ListOptions{}) {
		if !errors.As(err, &e) || e.StatusCode != 401 || e.Code != client.ErrorCodeUnauthorized {
			t.Fatalf("wrong key: %v", err)
		}
	}
	_, err = newClient(t, s, s.URL+"/v1", key, client.Options{}).CreatePetWithKey(ctx, "a key", client.NewPet{Name: "Rex", CategoryId: 1})
	if !errors.As(err, &e) || e.Code != client.ErrorCodeInvalidRequest {
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
	first, err := c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Rex", CategoryId: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Rex", CategoryId: 1})
	if err != nil || again.Id != first.Id {
		t.Fatalf("retry: %+v %v; first %+v", again, err, first)
	}
	_, err = c.CreatePetWithKey(ctx, idem, client.NewPet{Name: "Tom", CategoryId: 1})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 422 || e.Code != client.ErrorCodeIdempotencyKeyReused {
		t.Fatalf("other pet, same key: %v", err)
	}
	if n, _ := s.App.CountRecords("pets"); n != 1 {
		t.Fatalf("%d pets, want 1", n)
	}
}

// A 503 with Retry-After (from a proxy in front of the service) is waited
// for and retried; a 429 whose Retry-After ends after the context's deadline
// is returned at once.
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
	if _, err := c.CreatePet(context.Background(), client.NewPet{Name: "Rex", CategoryId: 1}); err != nil {
		t.Fatal(err)
	}
	if waited := sentAt[1].Sub(sentAt[0]); waited < time.Second {
		t.Fatalf("retried %v after a 503 with Retry-After: 1", waited)
	}

	// The key's second request of the minute passes; the third is a 429
	// with a Retry-After of about a minute, beyond the deadline.
	direct := newClient(t, s, s.URL+"/v1", key, client.Options{})
	if _, err := direct.CreatePet(context.Background(), client.NewPet{Name: "Tom", CategoryId: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	_, err := direct.CreatePet(ctx, client.NewPet{Name: "Ada", CategoryId: 1})
	var e *client.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.Code != client.ErrorCodeRateLimitExceeded || e.RetryAfter <= 5*time.Second {
		t.Fatalf("over the limit: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("returned after %v, want at once", took)
	}
}

func TestNewRefusesRelativeURL(t *testing.T) {
	if _, err := client.New("/v1", "k", client.Options{}); err == nil {
		t.Fatal("a relative base URL was accepted")
	}
}
