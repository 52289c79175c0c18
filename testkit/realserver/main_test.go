package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"petstore/internal/pets"
	"petstore/testkit/realserver"
)

// bin is the petstore binary, built once for all tests of the package.
var bin string

func TestMain(m *testing.M) { realserver.TestMain(m, &bin) }

// start runs the binary on dir until the test ends, checking its /v1
// exchanges against the OpenAPI document.
func start(t *testing.T, dir string, args ...string) *realserver.Process {
	t.Helper()
	p, err := realserver.Start(bin, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	p.CheckContract(t)
	t.Cleanup(p.Kill)
	return p
}

// createKey runs `keys create ARGS` on dir.
func createKey(t *testing.T, dir string, args ...string) (key, id string) {
	t.Helper()
	key, id, err := realserver.CreateKey(bin, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !keyLine.MatchString(key) {
		t.Fatalf("keys create %v printed the key %q, want %v", args, key, keyLine)
	}
	return key, id
}

// getPet fetches a pet, failing the test unless it is there.
func getPet(t *testing.T, p *realserver.Process, key string, id int64) pets.Pet {
	t.Helper()
	status, body, err := p.Do(context.Background(), http.MethodGet, fmt.Sprint("/v1/pets/", id), key, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET pet %d: %d %v %s", id, status, err, body)
	}
	var got pets.Pet
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("GET pet %d: %v: %s", id, err, body)
	}
	return got
}
