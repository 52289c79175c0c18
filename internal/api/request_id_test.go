package api_test

import (
	"log/slog"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/options"
	"petstore/testkit/apptest"
	"petstore/testkit/realserver"
)

// Every answer names its request, /v1's, errors, the staff API's, the
// dashboard's and the pages' alike, in Request-Id and X-Request-Id: an id of
// its own, or the one a named proxy sent when it is safe to keep. The access
// log's line, a 500's line and a staff change's audit record name the same.
func TestRequestIDs(t *testing.T) {
	console := &realserver.SyncBuffer{}
	s := apptest.StartWith(t, apptest.Config{
		Server:    options.Server{ProxyAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Console:   slog.NewTextHandler(console, nil),
		AccessLog: true,
		Middleware: &hook.Handler[*core.RequestEvent]{Func: func(e *core.RequestEvent) error {
			if e.Request.URL.Path == "/v1/pets" && e.Request.URL.RawQuery == "boom=1" {
				panic("boom")
			}
			return e.Next()
		}},
	})
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	ids := map[string]bool{}
	for _, c := range []struct {
		method, path, key string
		status            int
	}{
		{http.MethodGet, "/v1/pets", key, http.StatusOK},
		{http.MethodGet, "/v1/pets", "", http.StatusUnauthorized},
		{http.MethodGet, "/v1/nothing", key, http.StatusNotFound},
		{http.MethodGet, "/api/petstore/keys", "", http.StatusUnauthorized},
		{http.MethodGet, "/api/health", "", http.StatusOK},
		{http.MethodGet, "/_/", "", http.StatusOK},
		{http.MethodGet, "/", "", http.StatusOK},
	} {
		r := s.Do(t, c.method, c.path, c.key, nil)
		id := r.Header.Get("Request-Id")
		if r.StatusCode != c.status || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) || r.Header.Get("X-Request-Id") != id || ids[id] {
			t.Errorf("%s %s: %d, Request-Id %q, X-Request-Id %q (seen %v); want %d and a new id in both",
				c.method, c.path, r.StatusCode, id, r.Header.Get("X-Request-Id"), ids, c.status)
		}
		ids[id] = true
	}

	// From the named proxy, its id is kept when safe, replaced when not.
	for sent, kept := range map[string]bool{
		"abc-123":                true,
		"trace:1/2+3=.x_y":       true,
		"abc 123":                false,
		"abc\\r\\nlevel=ERROR":   false,
		strings.Repeat("a", 129): false,
		"":                       false,
	} {
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil, "X-Request-Id", sent)
		if got := r.Header.Get("Request-Id"); (got == sent) != kept || got == "" {
			t.Errorf("X-Request-Id %q from the proxy: Request-Id %q; kept %v, want %v", sent, got, got == sent, kept)
		}
	}
	if !strings.Contains(console.String(), "requestId=abc-123") {
		t.Errorf("the access log does not name the proxy's id:\n%s", console.String())
	}

	// A 500 names its id to the client and in its console line.
	r := s.Do(t, http.MethodGet, "/v1/pets?boom=1", key, nil, "X-Request-Id", "boom-7")
	apptest.ExpectError(t, r, http.StatusInternalServerError, "internal_error")
	if r.Header.Get("Request-Id") != "boom-7" || !regexp.MustCompile(`level=ERROR msg="Request failed".*requestId=boom-7`).MatchString(console.String()) {
		t.Errorf("the 500: Request-Id %q; console:\n%s", r.Header.Get("Request-Id"), console.String())
	}

	// A staff change's audit record names its request.
	r = s.Do(t, http.MethodPost, "/api/petstore/keys", "", map[string]any{"plan": "free", "name": "traced"},
		"Authorization", s.StaffToken(t), "X-Request-Id", "staff-42")
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create a key: %d %s", r.StatusCode, r.Body)
	}
	record, err := s.App.FindFirstRecordByData(audit.Collection, audit.RequestIDField, "staff-42")
	if err != nil || record.GetString(audit.ActionField) != string(audit.KeyCreated) {
		t.Errorf("no key.created audit record of request staff-42: %v", err)
	}
}

// Without --proxy-addresses, an X-Request-Id from the client is not kept:
// any client could name its requests after another's.
func TestRequestIDsFromClientsAreNotKept(t *testing.T) {
	s := apptest.Start(t, "")
	r := s.Do(t, http.MethodGet, "/api/health", "", nil, "X-Request-Id", "abc-123")
	if got := r.Header.Get("Request-Id"); got == "abc-123" || got == "" {
		t.Errorf("Request-Id %q for a client's X-Request-Id abc-123, want one of the service's", got)
	}
}
