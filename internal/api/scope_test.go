package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

var (
	readOnly  = []apikeys.Scope{apikeys.ScopePetsRead}
	writeOnly = []apikeys.Scope{apikeys.ScopePetsWrite}
)

// outOfScope checks that r is the refusal of a key without scope: 403
// insufficient_scope naming it, RFC 6750's challenge, the rate-limit
// headers of a counted request and no Retry-After, since waiting does not
// help.
func outOfScope(t *testing.T, r *apptest.Response, scope apikeys.Scope) {
	t.Helper()
	e := apptest.ExpectError(t, r, http.StatusForbidden, "insufficient_scope")
	if !strings.Contains(e.Message, string(scope)) {
		t.Errorf("%s %s: message %q does not name %s", r.Request.Method, r.Request.URL.Path, e.Message, scope)
	}
	if got, want := r.Header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope", scope="`+string(scope)+`"`; got != want {
		t.Errorf("%s %s: WWW-Authenticate %q, want %q", r.Request.Method, r.Request.URL.Path, got, want)
	}
	rateHeaders(t, r)
	if ra := r.Header.Get("Retry-After"); ra != "" {
		t.Errorf("%s %s: Retry-After %q on a 403", r.Request.Method, r.Request.URL.Path, ra)
	}
}

// remembered is how many Idempotency-Keys are remembered.
func remembered(t *testing.T, s *apptest.Server) int {
	t.Helper()
	var n int
	if err := s.App.DB().NewQuery("SELECT COUNT(*) FROM idempotency_keys").Row(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A pets:read key lists and gets, and its creates are refused with 403
// however they come: plain, with an Idempotency-Key, fifty at once. Nothing
// is stored and no Idempotency-Key remembered, and each refusal counts
// against the key's quota like any request.
func TestReadOnlyKeyCannotCreate(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	pet := s.CreatePet(t, s.NewKey(t, apikeys.NewKey{}), map[string]any{"name": "Rex", "categoryId": 1})
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", Scopes: readOnly})
	sent := 0
	send := func(method, path string, body any, header ...string) *apptest.Response {
		sent++
		return s.Do(t, method, path, key, body, header...)
	}

	if r := send(http.MethodGet, "/v1/pets", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("list: %d %s", r.StatusCode, r.Body)
	}
	if r := send(http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), nil); r.StatusCode != http.StatusOK {
		t.Fatalf("get: %d %s", r.StatusCode, r.Body)
	}
	body := map[string]any{"name": "Junk", "categoryId": 1}
	outOfScope(t, send(http.MethodPost, "/v1/pets", body), apikeys.ScopePetsWrite)
	outOfScope(t, send(http.MethodPost, "/v1/pets", body, "Idempotency-Key", "junk-1"), apikeys.ScopePetsWrite)
	// A body that is not even valid: the scope is refused first.
	outOfScope(t, send(http.MethodPost, "/v1/pets", "not json", "Content-Type", "text/plain"), apikeys.ScopePetsWrite)

	const burst = 50
	responses := sendAtOnce(burst, func(i int) *apptest.Response {
		if i%2 == 0 {
			return s.Do(t, http.MethodPost, "/v1/pets", key, body, "Idempotency-Key", fmt.Sprint("burst-", i))
		}
		return s.Do(t, http.MethodPost, "/v1/pets", key, body)
	})
	sent += burst
	for _, r := range responses {
		outOfScope(t, r, apikeys.ScopePetsWrite)
	}
	if n := s.CountRecords(t, "pets"); n != 1 {
		t.Errorf("%d pets stored, want the one made before", n)
	}
	if n := remembered(t, s); n != 0 {
		t.Errorf("%d Idempotency-Keys remembered, want none", n)
	}

	// Each refusal was counted: the free plan's 60 a minute, less every
	// request sent, this one included.
	r := send(http.MethodGet, "/v1/pets", nil)
	if limit, remaining := rateHeaders(t, r); limit != 60 || remaining != int64(60-sent) {
		t.Errorf("after %d requests: limit %d, remaining %d; want 60 and %d", sent, limit, remaining, 60-sent)
	}
}

// A pets:write key creates, and is refused on listPets and getPet (whose
// refusal carries its deprecation headers too).
func TestWriteOnlyKeyCannotRead(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Scopes: writeOnly})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	outOfScope(t, s.Do(t, http.MethodGet, "/v1/pets?status=available", key, nil), apikeys.ScopePetsRead)
	r := s.Do(t, http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), key, nil)
	outOfScope(t, r, apikeys.ScopePetsRead)
	if r.Header.Get("Deprecation") == "" || r.Header.Get("Sunset") == "" {
		t.Errorf("getPet's 403 without its deprecation headers: %v", r.Header)
	}
	// HEAD is a read too.
	if r := s.Do(t, http.MethodHead, "/v1/pets", key, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("HEAD /v1/pets: %d, want 403", r.StatusCode)
	}
}

// Authentication comes first: an unknown key is 401 on every operation,
// never 403. Then the scope: a key without it is told so even when over
// its limit, or banned, rather than to retry later. Then the limit.
func TestScopeComesAfterTheKeyAndBeforeTheLimit(t *testing.T) {
	s := apptest.Start(t, "")
	unknown := apikeys.Generate()
	for _, path := range []string{"/v1/pets", "/v1/pets/100000000000000"} {
		s.Do(t, http.MethodGet, path, unknown, nil).Error(t, http.StatusUnauthorized)
	}
	s.Do(t, http.MethodPost, "/v1/pets", unknown, map[string]any{"name": "Rex", "categoryId": 1}).Error(t, http.StatusUnauthorized)

	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 2, Scopes: readOnly})
	body := map[string]any{"name": "Rex", "categoryId": 1}
	for range 2 {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("within the limit: %d", r.StatusCode)
		}
	}
	retryAfter(t, s.Do(t, http.MethodGet, "/v1/pets", key, nil), "rate_limit_exceeded")
	outOfScope(t, s.Do(t, http.MethodPost, "/v1/pets", key, body), apikeys.ScopePetsWrite)
	// Over the limit until banned: the free plan bans a key that keeps
	// sending while limited.
	for i := 0; ; i++ {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if strings.Contains(string(r.Body), "api_key_banned") {
			break
		}
		if i > 10 {
			t.Fatalf("no ban: %d %s", r.StatusCode, r.Body)
		}
	}
	outOfScope(t, s.Do(t, http.MethodPost, "/v1/pets", key, body), apikeys.ScopePetsWrite)
	if n := s.CountRecords(t, "pets"); n != 0 {
		t.Errorf("%d pets stored", n)
	}
}

// Scopes narrowed while the key is in use hold from the next request:
// every create sent after the change returns is refused, on this instance
// and on another one serving the same data directory. Widened again, the
// next create passes on both.
func TestNarrowedScopesHoldFromTheNextRequest(t *testing.T) {
	dir := t.TempDir()
	a := apptest.Start(t, dir)
	b := apptest.Start(t, dir)
	token := a.StaffToken(t)
	key := a.NewKey(t, apikeys.NewKey{Plan: "business"})
	id := a.KeyRecord(t, key).Id
	setScopes := func(scopes ...apikeys.Scope) {
		t.Helper()
		r := a.Do(t, http.MethodPatch, "/api/petstore/keys/"+id, token, map[string]any{"scopes": apikeys.ScopeNames(scopes)})
		if r.StatusCode != http.StatusOK {
			t.Fatalf("PATCH scopes: %d %s", r.StatusCode, r.Body)
		}
	}

	// Creates in a loop on both instances while the scopes change.
	var narrowed atomic.Bool
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var createdAfter []string
	sentAfter := make([]atomic.Int64, 2)
	for i, s := range []*apptest.Server{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				after := narrowed.Load()
				r := s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": fmt.Sprint("busy ", n), "categoryId": 1})
				if after {
					sentAfter[i].Add(1)
				}
				if after && r.StatusCode != http.StatusForbidden {
					mu.Lock()
					createdAfter = append(createdAfter, fmt.Sprintf("%s: %d", s.URL, r.StatusCode))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	setScopes(apikeys.ScopePetsRead)
	narrowed.Store(true)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if len(createdAfter) > 0 {
		t.Errorf("creates sent after the narrowing and not refused: %v", createdAfter)
	}
	if sentAfter[0].Load() == 0 || sentAfter[1].Load() == 0 {
		t.Fatalf("creates sent after the narrowing: %d and %d, want some on each instance", sentAfter[0].Load(), sentAfter[1].Load())
	}
	for _, s := range []*apptest.Server{a, b} {
		outOfScope(t, s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": "Rex", "categoryId": 1}), apikeys.ScopePetsWrite)
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Errorf("%s: a read after the narrowing: %d", s.URL, r.StatusCode)
		}
	}

	setScopes(apikeys.ScopePetsRead, apikeys.ScopePetsWrite)
	for _, s := range []*apptest.Server{a, b} {
		s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	}
}
