package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A key's last use is written off the request path with one write in
// flight per key: while SQLite's writer is held, 50 requests of a key whose
// last_used is stale queue one write for the writer, not 50 (each waiting
// goroutine one more write once the writer is free); the write lands once
// it is free.
func TestLastUseOneWriteInFlightPerKey(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	writer := s.App.NonconcurrentDB().(*dbx.DB)
	tx, err := writer.Begin()
	if err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			if err := tx.Rollback(); err != nil {
				t.Error(err)
			}
		}
	}
	defer release()
	waits := func() int64 { return writer.DB().Stats().WaitCount }
	before := waits()
	for range 50 {
		if r := s.Do(t, http.MethodGet, "/v1/pets", key, nil); r.StatusCode != http.StatusOK {
			t.Fatalf("listPets: %d %s", r.StatusCode, r.Body)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); waits() == before; {
		if time.Now().After(deadline) {
			t.Fatal("no write of the key's last use waits for the writer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Besides the one write, a background writer (the usage recorder's
	// flush every 5 s) may wait too.
	if n := waits() - before; n > 2 {
		t.Errorf("%d writes wait for the writer after 50 requests of one key, want 1 (and at most 1 of another writer)", n)
	}
	release()
	for deadline := time.Now().Add(10 * time.Second); s.KeyRecord(t, key).GetString(apikeys.LastUsedField) == ""; {
		if time.Now().After(deadline) {
			t.Fatal("the key's last use is not written once the writer is free")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
