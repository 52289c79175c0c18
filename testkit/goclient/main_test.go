package goclient_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"petstore/testkit/realserver"
)

// TestMain runs the examples against the real binary: it builds it, starts
// it on a fresh data directory with a business key and three sold pets
// (Ada, Bea, Cid), and gives the examples its address and key in
// PETSTORE_URL and PETSTORE_KEY, as a user's program would get them. The
// examples create no sold pet, so that what they print about sold pets does
// not depend on which of them ran before. Tests start their own servers.
func TestMain(m *testing.M) {
	realserver.ExitIfShort()
	code, err := runWithServer(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		code = 1
	}
	os.Exit(code)
}

func runWithServer(m *testing.M) (int, error) {
	tmp, err := os.MkdirTemp("", "petstore-client-examples-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	bin, err := realserver.Build(tmp)
	if err != nil {
		return 0, err
	}
	dir := tmp + "/data"
	key, _, err := realserver.CreateKey(bin, dir, "--plan", "business")
	if err != nil {
		return 0, err
	}
	p, err := realserver.Start(bin, dir)
	if err != nil {
		return 0, err
	}
	defer p.Kill()
	for _, name := range []string{"Ada", "Bea", "Cid"} {
		body := fmt.Appendf(nil, `{"name": %q, "categoryId": 1, "status": "sold"}`, name)
		status, answer, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, body)
		if err != nil || status != http.StatusCreated {
			return 0, fmt.Errorf("seeding %s: %d %v %s", name, status, err, bytes.TrimSpace(answer))
		}
	}
	os.Setenv("PETSTORE_URL", p.URL+"/v1")
	os.Setenv("PETSTORE_KEY", key)
	return m.Run(), nil
}
