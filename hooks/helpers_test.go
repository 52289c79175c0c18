package hooks_test

import (
	"regexp"
	"testing"

	"github.com/pocketbase/pocketbase/core"

	"petstore/apikeys"
	"petstore/hooks"
	"petstore/internal/apptest"
)

// leakPattern matches what an Error message must never show a client: Go
// type and package names, decoder, SQL and runtime internals.
var leakPattern = regexp.MustCompile(`(?i)\bu?int(8|16|32|64)?\b|\bfloat(32|64)\b|(?-i:\bjson(: |\.[A-Z]))|strconv|unmarshal|reflect|\*?\bhooks\.|\bstruct\b|map\[|\[\]|goroutine|\bpanic|\bruntime\b|sqlite|\bsql\b|no such (table|column)|\.go:\d`)

// expectError asserts that r is the spec's Error body with status and code
// and that its message shows no internals.
func expectError(t *testing.T, r *apptest.Response, status int, code string) hooks.Error {
	t.Helper()
	e := r.Error(t, status)
	if e.Code != code {
		t.Errorf("%s %s: code %q, want %q", r.Request.Method, r.Request.URL, e.Code, code)
	}
	if leak := leakPattern.FindString(e.Message); leak != "" {
		t.Errorf("%s %s: message %q shows %q", r.Request.Method, r.Request.URL, e.Message, leak)
	}
	return e
}

// countRecords is how many records collection holds.
func countRecords(t *testing.T, s *apptest.Server, collection string) int64 {
	t.Helper()
	n, err := s.App.CountRecords(collection)
	if err != nil {
		t.Fatalf("count %s: %v", collection, err)
	}
	return n
}

// keyRecord is the api_keys record of key, as staff see it in the dashboard.
func keyRecord(t *testing.T, s *apptest.Server, key string) *core.Record {
	t.Helper()
	r, err := s.App.FindFirstRecordByData(apikeys.Collection, "key_hash", apikeys.Hash(key))
	if err != nil {
		t.Fatalf("find key record: %v", err)
	}
	return r
}

// superuserToken creates a PocketBase superuser and returns one of its auth
// tokens, the credential of the dashboard.
func superuserToken(t *testing.T, s *apptest.Server) string {
	t.Helper()
	return s.SuperuserToken(t, "staff@example.com", "a long enough password")
}
