package idempotency_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/idempotency"
	"petstore/testkit/apptest"
)

// create posts body to createPet with key and, when idemKey is not empty,
// that Idempotency-Key.
func create(t *testing.T, s *apptest.Server, key, idemKey, body string, header ...string) *apptest.Response {
	t.Helper()
	return s.Do(t, http.MethodPost, "/v1/pets", key, body, append([]string{"Idempotency-Key", idemKey}, header...)...)
}

func petsNamed(t *testing.T, s *apptest.Server, name string) int64 {
	t.Helper()
	n, err := s.App.CountRecords("pets", dbx.HashExp{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func rememberedAnswers(t *testing.T, s *apptest.Server) int {
	t.Helper()
	var n int
	if err := s.App.DB().NewQuery("SELECT COUNT(*) FROM idempotency_keys").Row(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// replayed asserts that r repeats first: status, body and Location, with
// Idempotent-Replayed: true.
func replayed(t *testing.T, first, r *apptest.Response) {
	t.Helper()
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the first answer has Idempotent-Replayed %q", first.Header.Get("Idempotent-Replayed"))
	}
	if r.StatusCode != first.StatusCode || !bytes.Equal(r.Body, first.Body) ||
		r.Header.Get("Location") != first.Header.Get("Location") {
		t.Errorf("replay %d %q Location %q; first %d %q Location %q", r.StatusCode, r.Body, r.Header.Get("Location"),
			first.StatusCode, first.Body, first.Header.Get("Location"))
	}
	if got := r.Header.Get("Idempotent-Replayed"); got != "true" {
		t.Errorf("replay has Idempotent-Replayed %q, want true", got)
	}
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if r.Header.Get(h) != first.Header.Get(h) {
			t.Errorf("replay %s %q, first %q", h, r.Header.Get(h), first.Header.Get(h))
		}
	}
}

func TestRetryReplaysTheFirstAnswer(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`

	first := create(t, s, key, "k-1", body)
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	for _, form := range []string{"k-1", `"k-1"`} { // bare and Structured Field string: one key
		replayed(t, first, create(t, s, key, form, body))
	}
	if n := petsNamed(t, s, "Rex"); n != 1 {
		t.Fatalf("%d pets named Rex, want 1", n)
	}

	// A new key is a new pet, and no key at all behaves as before.
	if r := create(t, s, key, "k-2", body); r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("new key: %d, Idempotent-Replayed %q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	if r := s.Do(t, http.MethodPost, "/v1/pets", key, body); r.StatusCode != http.StatusCreated {
		t.Fatalf("no key: %d", r.StatusCode)
	}
	if n := petsNamed(t, s, "Rex"); n != 3 {
		t.Fatalf("%d pets named Rex, want 3", n)
	}
	if n := rememberedAnswers(t, s); n != 2 {
		t.Fatalf("%d answers remembered, want 2", n)
	}
}

func TestSameKeyOtherBodyIsRefused(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	if r := create(t, s, key, "k", `{"name": "Rex", "categoryId": 3}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	for _, body := range []string{
		`{"name": "Tom", "categoryId": 3}`,
		`{"name": "Rex", "categoryId": 3, "status": "available"}`, // what the service would do the same is still another request
		`{"name": "Rex", "categoryId": 3.0}`,                      // another number's text
		`{"name": "Rex", "name": "Rex", "categoryId": 3}`,         // a repeated member is its bytes
	} {
		r := create(t, s, key, "k", body)
		e := r.Error(t, http.StatusUnprocessableEntity)
		if e.Code != api.CodeIdempotencyKeyReused || r.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s: code %q, Idempotent-Replayed %q", body, e.Code, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if n, _ := s.App.CountRecords("pets"); n != 1 {
		t.Fatalf("%d pets, want 1", n)
	}
}

// A retry that encodes the same JSON object again, its members in another
// order or with other spacing, is the same request: it replays.
func TestSameObjectOtherBytesReplays(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	first := create(t, s, key, "k", `{"name": "Rex", "categoryId": 3}`)
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	for _, body := range []string{`{"name":"Rex","categoryId":3}`, `{"categoryId": 3, "name": "Rex"}`, "{\n\t\"categoryId\" : 3 ,\n\t\"name\" : \"Rex\"\n}"} {
		replayed(t, first, create(t, s, key, "k", body))
	}
	if n, _ := s.App.CountRecords("pets"); n != 1 {
		t.Fatalf("%d pets, want 1", n)
	}
}

// An answer remembered by its body's bytes, as before bodies were compared
// as JSON, replays to a retry of those bytes across the upgrade; another
// encoding of the object is another request to it.
func TestAnswerRememberedByBytesReplays(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`
	first := create(t, s, key, "k", body)
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d %s", first.StatusCode, first.Body)
	}
	raw := sha256.Sum256([]byte(body))
	if _, err := s.App.DB().NewQuery("UPDATE idempotency_keys SET body_hash = {:hash}").Bind(dbx.Params{"hash": raw[:]}).Execute(); err != nil {
		t.Fatal(err)
	}
	replayed(t, first, create(t, s, key, "k", body))
	if r := create(t, s, key, "k", `{"categoryId": 3, "name": "Rex"}`); r.Error(t, http.StatusUnprocessableEntity).Code != api.CodeIdempotencyKeyReused {
		t.Fatalf("the object in another order, against bytes remembered: %s", r.Body)
	}
}

func TestBodyErrorIsRemembered(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	bad := `{"name": "Rex", "categoryId": 1.5}`
	first := create(t, s, key, "k", bad)
	if e := first.Error(t, http.StatusBadRequest); !strings.Contains(e.Message, "categoryId") {
		t.Fatalf("first: %s", first.Body)
	}
	replayed(t, first, create(t, s, key, "k", bad))
	// The key stays bound to the bad body: a corrected body needs a new key.
	if r := create(t, s, key, "k", `{"name": "Rex", "categoryId": 1}`); r.Error(t, http.StatusUnprocessableEntity).Code != api.CodeIdempotencyKeyReused {
		t.Fatalf("corrected body under the same key: %s", r.Body)
	}
	if n, _ := s.App.CountRecords("pets"); n != 0 {
		t.Fatalf("%d pets, want 0", n)
	}
}

// Answers the client may retry are not remembered: after each, the same key
// and body still create the pet.
func TestRetryableAnswersAreNotRemembered(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`

	// 415, 413, and a 400 that is not about the body.
	if r := create(t, s, key, "k", body, "Content-Type", "text/plain"); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("415 expected, got %d", r.StatusCode)
	}
	if r := create(t, s, key, "k", strings.Repeat(" ", 64<<10)+body); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("413 expected, got %d", r.StatusCode)
	}
	if r := s.Do(t, http.MethodPost, "/v1/pets?x=1", key, body, "Idempotency-Key", "k"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("400 for the query expected, got %d", r.StatusCode)
	}
	// 401: no key, no scope to remember anything in.
	if r := create(t, s, "", "k", body); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("401 expected, got %d", r.StatusCode)
	}
	// 500: the pet cannot be saved (SQLite refuses the row), once; nothing of it is kept.
	if _, err := s.App.DB().NewQuery("CREATE TRIGGER refuse_pets BEFORE INSERT ON pets BEGIN SELECT RAISE(ABORT, 'injected failure'); END").Execute(); err != nil {
		t.Fatal(err)
	}
	if r := create(t, s, key, "k", body); r.Error(t, http.StatusInternalServerError).Code != api.CodeInternalError {
		t.Fatalf("500 expected, got %d", r.StatusCode)
	}
	if _, err := s.App.DB().NewQuery("DROP TRIGGER refuse_pets").Execute(); err != nil {
		t.Fatal(err)
	}
	if n := rememberedAnswers(t, s); n != 0 {
		t.Fatalf("%d answers remembered after refusals, want 0", n)
	}

	r := create(t, s, key, "k", body)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after the refusals: %d, Idempotent-Replayed %q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	if n := petsNamed(t, s, "Rex"); n != 1 {
		t.Fatalf("%d pets named Rex, want 1", n)
	}
}

func TestKeysAreScopedPerAPIKey(t *testing.T) {
	s := apptest.Start(t, "")
	a := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	b := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`
	ra, rb := create(t, s, a, "k", body), create(t, s, b, "k", body)
	if ra.StatusCode != http.StatusCreated || rb.StatusCode != http.StatusCreated || rb.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a: %d; b: %d, Idempotent-Replayed %q", ra.StatusCode, rb.StatusCode, rb.Header.Get("Idempotent-Replayed"))
	}
	if bytes.Equal(ra.Body, rb.Body) {
		t.Fatal("two API keys got the same pet")
	}

	// Deleting an API key deletes its answers.
	rec, err := s.App.FindFirstRecordByData(apikeys.Collection, apikeys.HashField, apikeys.Hash(a))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Delete(rec); err != nil {
		t.Fatal(err)
	}
	if n := rememberedAnswers(t, s); n != 1 {
		t.Fatalf("%d answers remembered, want 1 (b's)", n)
	}
}

func TestMalformedKeysAreRefused(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`
	for name, value := range map[string]string{
		"empty":               "",
		"256 characters":      strings.Repeat("k", 256),
		"quoted 256":          `"` + strings.Repeat("k", 256) + `"`,
		"space":               "a b",
		"tab":                 "a\tb",
		"not ASCII":           "clé",
		"empty quoted string": `""`,
		"unterminated quote":  `"abc`,
		"quote inside":        `"a"b"`,
		"bad escape":          `"a\b"`,
		"lone quote":          `"`,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header["Idempotency-Key"] = []string{value}
			r := s.Send(t, req)
			if e := r.Error(t, http.StatusBadRequest); e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, "Idempotency-Key") {
				t.Fatalf("%q: %s", value, r.Body)
			}
		})
	}
	t.Run("two headers", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header["Idempotency-Key"] = []string{"a", "b"}
		if e := s.Send(t, req).Error(t, http.StatusBadRequest); !strings.Contains(e.Message, "once") {
			t.Fatalf("message %q", e.Message)
		}
	})
	if n, _ := s.App.CountRecords("pets"); n != 0 {
		t.Fatalf("%d pets, want 0", n)
	}

	// The longest keys, bare and quoted with escapes, are accepted.
	if r := create(t, s, key, strings.Repeat("k", 255), body); r.StatusCode != http.StatusCreated {
		t.Fatalf("255-byte key: %d %s", r.StatusCode, r.Body)
	}
	// The quoted one is 259 bytes long: over the document's maxLength,
	// which bounds the bare form that clients send, so it goes around the
	// contract check.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+strings.Repeat("q", 253)+`\"\\"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("quoted key of 255 characters: %d", resp.StatusCode)
	}
}

// Concurrent requests with one key make one pet; the others wait for it and
// replay its answer. Half go to a second instance on the same data directory.
func TestConcurrentDuplicatesMakeOnePet(t *testing.T) {
	s := apptest.Start(t, "")
	other := apptest.Start(t, s.Dir)
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 3}`
	const n = 16
	responses := make([]*apptest.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			url := s.URL
			if i%2 == 1 {
				url = other.URL
			}
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/pets", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "same")
			resp, err := s.Client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			responses[i] = &apptest.Response{Response: resp, Body: buf.Bytes()}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var fresh *apptest.Response
	for _, r := range responses {
		if r.StatusCode != http.StatusCreated {
			t.Fatalf("status %d: %s", r.StatusCode, r.Body)
		}
		if r.Header.Get("Idempotent-Replayed") == "" {
			if fresh != nil {
				t.Fatal("two answers were not replays")
			}
			fresh = r
		}
	}
	if fresh == nil {
		t.Fatal("every answer was a replay")
	}
	for _, r := range responses {
		if r != fresh {
			replayed(t, fresh, r)
		}
	}
	if c := petsNamed(t, s, "Rex"); c != 1 {
		t.Fatalf("%d pets named Rex, want 1", c)
	}
}

// Replays count against the rate limit like any request.
func TestReplaysAreCounted(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3})
	body := `{"name": "Rex", "categoryId": 3}`
	for i := range 3 {
		if r := create(t, s, key, "k", body); r.StatusCode != http.StatusCreated {
			t.Fatalf("request %d: %d", i+1, r.StatusCode)
		}
	}
	r := create(t, s, key, "k", body)
	if e := r.Error(t, http.StatusTooManyRequests); e.Code != api.CodeRateLimitExceeded || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("fourth: %s, Idempotent-Replayed %q", r.Body, r.Header.Get("Idempotent-Replayed"))
	}
}

// After 24 hours a key is forgotten: it is free again, and the purge deletes
// its row.
func TestAnswersExpireAfterADay(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	if r := create(t, s, key, "old", `{"name": "Rex", "categoryId": 3}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("first: %d", r.StatusCode)
	}
	if r := create(t, s, key, "recent", `{"name": "Ada", "categoryId": 3}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("second: %d", r.StatusCode)
	}
	age := func(idemKey string, d time.Duration) {
		_, err := s.App.DB().NewQuery("UPDATE idempotency_keys SET created = {:t} WHERE idempotency_key = {:k}").
			Bind(dbx.Params{"t": time.Now().Add(-d).UnixMilli(), "k": idemKey}).Execute()
		if err != nil {
			t.Fatal(err)
		}
	}
	age("old", idempotency.Retention+time.Second)
	age("recent", idempotency.Retention-time.Minute)

	if r := create(t, s, key, "recent", `{"name": "Tom", "categoryId": 3}`); r.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a key 23h59m old is still remembered: got %d", r.StatusCode)
	}
	// Expired but not purged yet: not replayed, and the key takes the new body.
	r := create(t, s, key, "old", `{"name": "Tom", "categoryId": 3}`)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("expired key: %d, Idempotent-Replayed %q", r.StatusCode, r.Header.Get("Idempotent-Replayed"))
	}
	replayed(t, r, create(t, s, key, "old", `{"name": "Tom", "categoryId": 3}`))

	age("old", idempotency.Retention+time.Second)
	if n, err := idempotency.Purge(s.App, time.Now()); err != nil || n != 1 {
		t.Fatalf("purge deleted %d rows (%v), want 1", n, err)
	}
	if n := rememberedAnswers(t, s); n != 1 {
		t.Fatalf("%d answers remembered after the purge, want 1", n)
	}
	var scheduled bool
	for _, job := range s.App.Cron().Jobs() {
		scheduled = scheduled || job.Id() == "petstoreIdempotencyPurge"
	}
	if !scheduled {
		t.Fatal("the purge is not in PocketBase's cron")
	}
}

// Creates that wait for SQLite's write lock together are written together
// (package pets batches them); each keeps its own key, row, answer and
// error: a failing create fails alone, duplicates replay one answer.
func TestBatchedCreatesKeepTheirOwnAnswers(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	if _, err := s.App.DB().NewQuery(`CREATE TRIGGER refuse_poison BEFORE INSERT ON pets WHEN NEW.name = 'poison'
		BEGIN SELECT RAISE(ABORT, 'injected failure'); END`).Execute(); err != nil {
		t.Fatal(err)
	}

	// Another connection holds the write lock while the creates arrive.
	ctx := context.Background()
	conn := s.HoldWriteLock(t)

	requests := []struct{ name, idemKey, body string }{
		{"rex", "k-rex", `{"name": "Rex", "categoryId": 3}`},
		{"ada", "k-ada", `{"name": "Ada", "categoryId": 4}`},
		{"dup 1", "k-dup", `{"name": "Dup", "categoryId": 5}`},
		{"dup 2", "k-dup", `{"name": "Dup", "categoryId": 5}`},
		{"bad body", "k-bad", `{"name": "Bad", "categoryId": 0}`},
		{"poison", "k-poison", `{"name": "poison", "categoryId": 6}`},
		{"no key", "", `{"name": "Plain", "categoryId": 7}`},
	}
	responses := make([]*apptest.Response, len(requests))
	var wg sync.WaitGroup
	for i, r := range requests {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(r.body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			if r.idemKey != "" {
				req.Header.Set("Idempotency-Key", r.idemKey)
			}
			resp, err := s.Client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(resp.Body)
			responses[i] = &apptest.Response{Response: resp, Body: buf.Bytes()}
		})
	}
	time.Sleep(300 * time.Millisecond) // the requests reach the writer
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	byName := map[string]*apptest.Response{}
	for i, r := range requests {
		byName[r.name] = responses[i]
	}
	for _, name := range []string{"rex", "ada", "no key"} {
		if r := byName[name]; r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
			t.Errorf("%s: %d %s, Idempotent-Replayed %q", name, r.StatusCode, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}
	first, second := byName["dup 1"], byName["dup 2"]
	if first.Header.Get("Idempotent-Replayed") != "" {
		first, second = second, first
	}
	replayed(t, first, second)
	if e := byName["bad body"].Error(t, http.StatusBadRequest); !strings.Contains(e.Message, "categoryId") {
		t.Errorf("bad body: %s", byName["bad body"].Body)
	}
	byName["poison"].Error(t, http.StatusInternalServerError)

	for name, want := range map[string]int64{"Rex": 1, "Ada": 1, "Dup": 1, "Bad": 0, "poison": 0, "Plain": 1} {
		if got := petsNamed(t, s, name); got != want {
			t.Errorf("%d pets named %s, want %d", got, name, want)
		}
	}
	if n := rememberedAnswers(t, s); n != 4 { // rex, ada, dup, bad body: not the failure
		t.Errorf("%d answers remembered, want 4", n)
	}
	replayed(t, byName["bad body"], create(t, s, key, "k-bad", `{"name": "Bad", "categoryId": 0}`))
	replayed(t, byName["rex"], create(t, s, key, "k-rex", `{"name": "Rex", "categoryId": 3}`))
}
