package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// Every answer the service writes under /v1 carries the rate-limit headers and
// was counted against its caller, whatever produced it: paths the router
// never sees as sent, 405, 413 (announced and chunked), 415, 500, a panic. Each
// request is written verbatim on its own connection: Go's client would clean
// some of these paths. CORS preflights carry the headers of their address's
// window without being counted.
func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	// A request that goes through everything, then fails after being counted.
	s := apptest.StartWith(t, apptest.Config{Middleware: &hook.Handler[*core.RequestEvent]{
		Func: func(e *core.RequestEvent) error {
			if e.Request.Header.Get("X-Test-Panic") != "" {
				panic("boom")
			}
			return e.Next()
		},
	}})
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1000, PerDay: 100_000})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	petPath := fmt.Sprint("/v1/pets/", pet.ID)
	auth := "Authorization: Bearer " + key + "\r\n"
	big := strings.Repeat("x", 64<<10+1)

	keyed := []struct {
		name, head, body string
		status           int
		code             string
	}{
		{"listPets", "GET /v1/pets", "", 200, ""},
		{"HEAD listPets", "HEAD /v1/pets", "", 200, ""},
		{"getPet", "GET " + petPath, "", 200, ""},
		{"contract", "GET /v1/openapi.json", "", 200, ""},
		{"bad query", "GET /v1/pets?limit=0", "", 400, api.CodeInvalidRequest},
		{"empty segment", "GET /v1//pets", "", 404, api.CodeNotFound},
		{"empty segment, POST", "POST /v1//pets", "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 404, api.CodeNotFound},
		{"dot segment", "GET /v1/./pets", "", 404, api.CodeNotFound},
		{"dot-dot segment", "GET /v1/pets/../pets", "", 404, api.CodeNotFound},
		{"escaped dot-dot segment", "GET /v1/pets/%2e%2e/pets", "", 404, api.CodeNotFound},
		{"dot-dot out of /v1", "GET /v1/../api/health", "", 404, api.CodeNotFound},
		{"trailing empty segment", "GET /v1/pets//", "", 404, api.CodeNotFound},
		{"escaped slash", "GET /v1%2Fpets", "", 404, api.CodeNotFound},
		{"escaped slashes, lower case", "GET /v1%2fpets%2F1", "", 404, api.CodeNotFound},
		{"unknown path", "GET /v1/nowhere", "", 404, api.CodeNotFound},
		{"wrong method", "DELETE /v1/pets", "", 405, api.CodeMethodNotAllowed},
		{"wrong method, refused path", "DELETE /v1//pets", "", 404, api.CodeNotFound},
		{"announced body over 64 KiB", "POST /v1/pets",
			fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(big), big), 413, api.CodePayloadTooLarge},
		{"chunked body over 64 KiB", "POST /v1/pets",
			fmt.Sprintf("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(big), big), 413, api.CodePayloadTooLarge},
		{"not JSON", "POST /v1/pets", "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}", 415, api.CodeUnsupportedMediaType},
		{"panic", "POST /v1/pets", "X-Test-Panic: 1\r\nContent-Type: application/json\r\nContent-Length: 33\r\n\r\n" + `{"name":"panic","categoryId":1}  `, 500, api.CodeInternalError},
	}
	remaining := rawRateHeaders(t, rawExchange(t, s, "GET /v1/pets", auth, 200))
	for _, c := range keyed {
		t.Run(c.name, func(t *testing.T) {
			r := rawExchange(t, s, c.head, auth+c.body, c.status)
			if c.code != "" {
				e := apptest.ExpectError(t, r, c.status, c.code)
				if path := strings.Fields(c.head)[1]; c.status == 404 && !strings.Contains(e.Message, path) {
					t.Errorf("message %q does not name the path sent, %s", e.Message, path)
				}
			}
			got := rawRateHeaders(t, r)
			if got != remaining-1 {
				t.Fatalf("X-RateLimit-Remaining %d after %d: the request was not counted against its key once", got, remaining)
			}
			remaining = got
		})
	}

	// Without a key: counted against the address. Preflights report the
	// address's window without counting.
	anonymous := rawRateHeaders(t, rawExchange(t, s, "GET /v1/openapi.yaml", "", 200))
	for _, c := range []struct {
		name, head, header string
		status             int
		counted            bool
	}{
		{"no key", "GET /v1/pets", "", 401, true},
		{"refused path without a key", "GET /v1//pets", "", 404, true},
		{"preflight", "OPTIONS /v1/pets", "Origin: https://shop.example\r\nAccess-Control-Request-Method: POST\r\n" +
			"Access-Control-Request-Headers: authorization, content-type\r\n", 204, false},
		{"preflight of a refused path", "OPTIONS /v1//pets", "Origin: https://shop.example\r\nAccess-Control-Request-Method: GET\r\n", 204, false},
		{"OPTIONS without Origin", "OPTIONS /v1/pets", "", 204, false},
		{"preflight with a key", "OPTIONS /v1/pets", auth + "Origin: https://shop.example\r\nAccess-Control-Request-Method: GET\r\n", 204, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rawExchange(t, s, c.head, c.header, c.status)
			want := anonymous
			if c.counted {
				want--
			}
			if got := rawRateHeaders(t, r); got != want {
				t.Fatalf("X-RateLimit-Remaining %d after %d; counted: want %v", got, anonymous, c.counted)
			}
			anonymous = want
		})
	}

	// A failure of the database behind the handler.
	if _, err := s.App.DB().NewQuery("DROP TABLE pets").Execute(); err != nil {
		t.Fatal(err)
	}
	r := rawExchange(t, s, "GET /v1/pets", auth, 500)
	apptest.ExpectError(t, r, 500, api.CodeInternalError)
	if got := rawRateHeaders(t, r); got != remaining-1 {
		t.Fatalf("500: X-RateLimit-Remaining %d after %d", got, remaining)
	}
	remaining--

	// A failure of the database behind the keys: the request cannot be
	// told apart from a keyless one, and is counted against its address.
	if _, err := s.App.DB().NewQuery("DROP TABLE " + apikeys.Collection).Execute(); err != nil {
		t.Fatal(err)
	}
	r = rawExchange(t, s, "GET /v1/pets", auth, 500)
	apptest.ExpectError(t, r, 500, api.CodeInternalError)
	if got := rawRateHeaders(t, r); got != anonymous-1 {
		t.Fatalf("500 of the key lookup: X-RateLimit-Remaining %d, want the address's %d", got, anonymous-1)
	}
}

// rawExchange writes "head HTTP/1.1", Host, Connection: close, then header
// (lines, and a body after a blank line if it has one) on a new connection,
// and reads the answer, which must have status.
func rawExchange(t *testing.T, s *apptest.Server, head, header string, status int) *apptest.Response {
	t.Helper()
	addr := strings.TrimPrefix(s.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	raw := head + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n" + header
	if !strings.Contains(header, "\r\n\r\n") {
		raw += "\r\n"
	}
	// The server may answer before reading everything (413): write on.
	go func() { _, _ = io.WriteString(conn, raw) }()
	method, target, _ := strings.Cut(head, " ")
	req, err := http.NewRequest(method, "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Path = target // as failure messages show it
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%s: no answer: %v", head, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: read body: %v", head, err)
	}
	if resp.StatusCode != status {
		t.Fatalf("%s: %d, want %d: %s", head, resp.StatusCode, status, body)
	}
	return &apptest.Response{Response: resp, Body: body}
}

// rawRateHeaders checks the rate-limit headers of r and returns X-RateLimit-Remaining.
func rawRateHeaders(t *testing.T, r *apptest.Response) int64 {
	t.Helper()
	for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if _, err := strconv.ParseInt(r.Header.Get(name), 10, 64); err != nil {
			t.Fatalf("%s %s (%d): %s = %q; headers %v", r.Request.Method, r.Request.URL.Path, r.StatusCode, name, r.Header.Get(name), r.Header)
		}
	}
	_, remaining := rateHeaders(t, r)
	return remaining
}
