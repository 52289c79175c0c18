package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/options"
	"petstore/testkit/apptest"
)

// hostileRequest is one request of the catalogue, written verbatim on its own
// connection, so that nothing on the client side cleans it up.
type hostileRequest struct {
	name   string
	method string
	target string   // the request target, as is
	auth   []string // Authorization header lines; nil: one with the valid key
	header string   // further header lines, each ending in \r\n
	body   string
	// chunked sends the body with Transfer-Encoding: chunked.
	chunked bool
	// trickle sends the request a byte at a time, slower than the server's
	// read-header timeout. The server closes the connection, with or
	// without Go's plain 400 depending on where the timeout falls.
	trickle bool

	status int
	// code is the Error code; "" for the answers of Go's HTTP server itself,
	// in plain text, which then closes the connection.
	code string
}

// readHeaderTimeout is the catalogue server's --read-header-timeout; a
// trickling client sends its headers over trickleFor.
const (
	readHeaderTimeout = time.Second
	trickleFor        = 5 * readHeaderTimeout
)

// TestHostileInput is the catalogue of hostile requests docs/operations.md documents.
// Each gets its documented answer and stores nothing.
func TestHostileInput(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{Server: options.Server{ReadHeaderTimeout: readHeaderTimeout}})
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1_000_000, PerDay: 10_000_000})
	s.CreatePet(t, key, map[string]any{"name": "Resident", "categoryId": 1})

	const maxBody = 64 << 10
	nameOfSize := func(total int) string { // a valid-looking body of exactly total bytes
		const head, tail = `{"name":"`, `","categoryId":1}`
		return head + strings.Repeat("x", total-len(head)-len(tail)) + tail
	}
	pet := func(fields string) string { return `{"name":"Rex","categoryId":1` + fields + `}` }
	invalid := func(name, body string) hostileRequest {
		return hostileRequest{name: name, method: "POST", target: "/v1/pets", body: body, status: 400, code: api.CodeInvalidRequest}
	}
	list := func(name, target string, status int, code string) hostileRequest {
		return hostileRequest{name: name, method: "GET", target: target, status: status, code: code}
	}
	unauthorized := func(name string, auth ...string) hostileRequest {
		return hostileRequest{name: name, method: "GET", target: "/v1/pets", auth: auth, status: 401, code: api.CodeUnauthorized}
	}
	tooLarge := func(r hostileRequest) hostileRequest {
		r.status, r.code = http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge
		return r
	}

	for _, c := range []hostileRequest{
		invalid("body one byte under 64 KiB, name too long", nameOfSize(maxBody-1)),
		invalid("body of exactly 64 KiB, name too long", nameOfSize(maxBody)),
		tooLarge(invalid("body one byte over 64 KiB", nameOfSize(maxBody+1))),
		tooLarge(hostileRequest{name: "chunked body one byte over 64 KiB", method: "POST", target: "/v1/pets",
			body: nameOfSize(maxBody + 1), chunked: true}),
		invalid("60000 nested arrays (under 64 KiB)", `{"name":`+strings.Repeat("[", 60000)),
		invalid("60000 nested arrays at the top", strings.Repeat("[", 60000)),
		invalid("60000 nested objects", strings.Repeat(`{"a":`, 12000)),
		tooLarge(invalid("100000 nested arrays", `{"name":`+strings.Repeat("[", 100000))),
		invalid("duplicate key", `{"name":"Rex","name":"Max","categoryId":1}`),
		invalid("duplicate key spelt with an escape", `{"name":"Rex","n\u0061me":"Max","categoryId":1}`),
		invalid("invalid UTF-8 in name", "{\"name\":\"R\xffx\",\"categoryId\":1}"),
		invalid("invalid UTF-8 in a key", "{\"n\xc3\":\"Rex\",\"categoryId\":1}"),
		invalid("escaped NUL in name", `{"name":"R\u0000x","categoryId":1}`),
		invalid("raw NUL in name", "{\"name\":\"R\x00x\",\"categoryId\":1}"),
		invalid("escape character in name", `{"name":"R\u001bx","categoryId":1}`),
		invalid("DEL in name", "{\"name\":\"R\x7fx\",\"categoryId\":1}"),
		invalid("C1 control in name", `{"name":"R\u0085x","categoryId":1}`),
		invalid("byte order mark before the body", "\xef\xbb\xbf"+pet("")),
		invalid("categoryId 1e309", `{"name":"Rex","categoryId":1e309}`),
		invalid("categoryId -0", `{"name":"Rex","categoryId":-0}`),
		invalid("categoryId with an exponent beyond int64", `{"name":"Rex","categoryId":1e99999999999999999999}`),
		invalid("categoryId 2^53", `{"name":"Rex","categoryId":9007199254740992}`),
		invalid("categoryId 2^63", `{"name":"Rex","categoryId":9223372036854775808}`),
		invalid("categoryId as a string", `{"name":"Rex","categoryId":"1"}`),
		invalid("a second value after the object", pet("")+`{}`),
		list("100 KB limit value", "/v1/pets?limit="+strings.Repeat("9", 100_000), 400, api.CodeInvalidRequest),
		list("100 KB parameter name", "/v1/pets?"+strings.Repeat("a", 100_000)+"=1", 400, api.CodeInvalidRequest),
		list("20000 parameters", "/v1/pets?"+strings.Repeat("status=sold&", 20_000), 400, api.CodeInvalidRequest),
		list("semicolon separator", "/v1/pets?limit=1;status=sold", 400, api.CodeInvalidRequest),
		list("bad percent-escape", "/v1/pets?status=%zz", 400, api.CodeInvalidRequest),
		list("repeated limit", "/v1/pets?limit=5&limit=5", 400, api.CodeInvalidRequest),
		list("repeated status", "/v1/pets?status=sold&status=pending", 400, api.CodeInvalidRequest),
		list("100 KB petId", "/v1/pets/"+strings.Repeat("9", 100_000), 400, api.CodeInvalidRequest),
		list("100 KB path", "/v1/"+strings.Repeat("a", 100_000), 404, api.CodeNotFound),
		list("invalid UTF-8 petId, escaped", "/v1/pets/%FF", 400, api.CodeInvalidRequest),
		list("invalid UTF-8 petId, raw", "/v1/pets/\xff", 400, api.CodeInvalidRequest),
		list("dot segments", "/v1/pets/../pets", 404, api.CodeNotFound),
		unauthorized("two schemes in one header", "Basic dXNlcjpwYXNz, Bearer KEY"),
		unauthorized("Bearer, then another scheme", "Bearer KEY, Basic dXNlcjpwYXNz"),
		unauthorized("two tokens", "Bearer KEY KEY"),
		unauthorized("two tokens, comma", "Bearer KEY,KEY"),
		unauthorized("two Authorization headers", "Bearer KEY", "Bearer KEY"),
		unauthorized("token without scheme", "KEY"),
		{name: "1 MB header", method: "GET", target: "/v1/pets",
			header: "X-Big: " + strings.Repeat("a", 1<<20+8<<10) + "\r\n", status: http.StatusRequestHeaderFieldsTooLarge},
		{name: "headers sent a byte at a time (slowloris)", method: "GET", target: "/v1/pets", trickle: true,
			header: "X-Slow: " + strings.Repeat("a", 1000) + "\r\n", status: http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.CountRecords(t, "pets")
			resp, body := c.send(t, s, key)
			switch {
			case resp == nil && c.trickle:
				// Closed before Go's server could answer its plain 400.
			case resp == nil:
				t.Fatalf("closed without an answer, want %d", c.status)
			case c.code == "":
				if resp.StatusCode != c.status || !resp.Close || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
					t.Fatalf("answered %d %v %q, want Go's plain %d and a close", resp.StatusCode, resp.Header, body, c.status)
				}
			default:
				apptest.ExpectError(t, &apptest.Response{Response: resp, Body: body}, c.status, c.code)
			}
			if after := s.CountRecords(t, "pets"); after != before {
				t.Fatalf("%d pets before, %d after", before, after)
			}
		})
	}
}

// send writes the request on a new connection and reads the answer, to the
// end of the connection when the server closes it.
func (c hostileRequest) send(t *testing.T, s *apptest.Server, key string) (*http.Response, []byte) {
	t.Helper()
	addr := strings.TrimPrefix(s.URL, "http://")
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", c.method, c.target, addr)
	auth := c.auth
	if auth == nil {
		auth = []string{"Bearer KEY"}
	}
	for _, a := range auth {
		fmt.Fprintf(&raw, "Authorization: %s\r\n", strings.ReplaceAll(a, "KEY", key))
	}
	raw.WriteString(c.header)
	switch {
	case c.trickle:
		// The header never ends.
	case c.chunked:
		fmt.Fprintf(&raw, "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(c.body), c.body)
	case c.body != "":
		fmt.Fprintf(&raw, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(c.body), c.body)
	default:
		raw.WriteString("\r\n")
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))

	answered := make(chan rawAnswer, 1)
	go func() {
		// The request, as failure messages show it.
		req := &http.Request{Method: c.method, URL: &url.URL{Path: c.target[:min(len(c.target), 80)]}}
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			answered <- rawAnswer{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		answered <- rawAnswer{resp, body, err}
	}()

	if c.trickle {
		// 5 times the configured bound: with the default (10 s) or
		// PocketBase's own (1 minute) the connection would outlast it.
		pause := trickleFor / time.Duration(raw.Len())
		for _, b := range raw.Bytes() {
			if _, err := conn.Write([]byte{b}); err != nil {
				break // closed by the server
			}
			select {
			case a := <-answered:
				return a.resp, a.body
			case <-time.After(pause):
			}
		}
		select {
		case a := <-answered:
			return a.resp, a.body
		case <-time.After(readHeaderTimeout):
			t.Fatalf("connection still open after trickling for %v (read-header timeout %v)", trickleFor, readHeaderTimeout)
		}
	}

	// The server may answer before reading everything (413, 431): write on.
	go func() { _, _ = conn.Write(raw.Bytes()) }()
	a := <-answered
	if a.err != nil {
		t.Fatalf("no answer: %v", a.err)
	}
	return a.resp, a.body
}

// rawAnswer is what came back on a raw connection: a response, or the read
// error that ended it (EOF, reset: the server closed it).
type rawAnswer struct {
	resp *http.Response
	body []byte
	err  error
}
