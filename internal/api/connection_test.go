package api_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// A body that the service refuses without reading it whole (too large, no
// valid key) must never be parsed as the next request on the connection: the
// server either reads it to its end or closes the connection. Otherwise a
// body could smuggle a request past a proxy, and the next client on the
// connection gets a plain-text 400.
func TestRefusedBodyIsNeverReadAsARequest(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	host := strings.TrimPrefix(s.URL, "http://")

	for _, tt := range []struct {
		name    string
		key     string
		size    int
		chunked bool
		status  int
		code    string
	}{
		{"too large, announced", key, 70 << 10, false, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge},
		{"too large, chunked", key, 70 << 10, true, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge},
		{"much too large, announced", key, 1 << 20, false, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge},
		{"much too large, chunked", key, 1 << 20, true, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge},
		{"unknown key, announced", apikeys.Generate(), 60 << 10, false, http.StatusUnauthorized, api.CodeUnauthorized},
		{"unknown key, chunked", apikeys.Generate(), 1 << 20, true, http.StatusUnauthorized, api.CodeUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The body starts with a request of its own.
			smuggled := "GET /v1/pets/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key + "\r\n\r\n"
			body := smuggled + strings.Repeat(" ", tt.size-len(smuggled))

			var wire bytes.Buffer
			fmt.Fprintf(&wire, "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n", tt.key)
			if tt.chunked {
				wire.WriteString("Transfer-Encoding: chunked\r\n\r\n")
				for rest := body; rest != ""; {
					n := min(len(rest), 4096)
					fmt.Fprintf(&wire, "%x\r\n%s\r\n", n, rest[:n])
					rest = rest[n:]
				}
				wire.WriteString("0\r\n\r\n")
			} else {
				fmt.Fprintf(&wire, "Content-Length: %d\r\n\r\n%s", len(body), body)
			}
			// The next request on the same connection.
			fmt.Fprintf(&wire, "GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", key)

			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go func() { _, _ = conn.Write(wire.Bytes()) }() // fails once the server closes; then the reads tell
			if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
				t.Fatal(err)
			}
			rd := bufio.NewReader(conn)

			post, _ := http.NewRequest(http.MethodPost, "/v1/pets", nil) // names the exchange in messages
			resp, err := http.ReadResponse(rd, post)
			if err != nil {
				t.Fatalf("first response: %v", err)
			}
			data, _ := io.ReadAll(resp.Body)
			apptest.ExpectError(t, &apptest.Response{Response: resp, Body: data}, tt.status, tt.code)

			next, err := http.ReadResponse(rd, nil)
			switch {
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				if !resp.Close {
					t.Errorf("the server closed the connection without saying Connection: close")
				}
			case err != nil:
				t.Fatalf("second response: %v", err)
			default:
				data, _ := io.ReadAll(next.Body)
				if next.StatusCode != http.StatusOK || !bytes.HasPrefix(data, []byte("[")) {
					t.Errorf("the next request got %s %q: the refused body was read as a request", next.Status, data)
				}
			}
		})
	}
}
