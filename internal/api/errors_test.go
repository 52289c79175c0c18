package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

func TestUnknownPathsUnderV1(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	for _, path := range []string{
		"/v1", "/v1/", "/v1/nope", "/v1/pet", "/v1/pets/1/x", "/v1//pets", "/v1/./pets",
		"/v1/pets/../pets", "/v1/pets/", "/v1/PETS", "/v1/store/orders", "/v1%2Fpets", "/v1%2fpets%2F1",
	} {
		for _, k := range []string{key, ""} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				t.Run(method+" "+path, func(t *testing.T) {
					apptest.ExpectError(t, s.Do(t, method, path, k, nil), http.StatusNotFound, api.CodeNotFound)
				})
			}
		}
	}
}

func TestWrongMethodsOnKnownPaths(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	petPath := fmt.Sprint("/v1/pets/", pet.ID)

	for _, tt := range []struct {
		method, path, allow string
	}{
		{http.MethodDelete, "/v1/pets", "GET, HEAD, POST"},
		{http.MethodPut, "/v1/pets", "GET, HEAD, POST"},
		{http.MethodPatch, "/v1/pets", "GET, HEAD, POST"},
		{"TRACE", "/v1/pets", "GET, HEAD, POST"},
		{http.MethodPost, petPath, "GET, HEAD"},
		{http.MethodPut, petPath, "GET, HEAD"},
		{http.MethodDelete, petPath, "GET, HEAD"},
		{http.MethodPatch, "/v1/pets/abc", "GET, HEAD"},
	} {
		for _, k := range []string{key, ""} {
			t.Run(tt.method+" "+tt.path, func(t *testing.T) {
				r := s.Do(t, tt.method, tt.path, k, nil)
				apptest.ExpectError(t, r, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
				if got := r.Header.Get("Allow"); got != tt.allow {
					t.Errorf("Allow %q, want %q", got, tt.allow)
				}
			})
		}
	}
	if s.CountRecords(t, "pets") != 1 {
		t.Errorf("a refused method changed the pets")
	}
}

// codeOfStatus is the catalogue's code for each status these tests provoke.
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            api.CodeInvalidRequest,
	http.StatusUnauthorized:          api.CodeUnauthorized,
	http.StatusNotFound:              api.CodeNotFound,
	http.StatusMethodNotAllowed:      api.CodeMethodNotAllowed,
	http.StatusRequestEntityTooLarge: api.CodePayloadTooLarge,
	http.StatusUnsupportedMediaType:  api.CodeUnsupportedMediaType,
	http.StatusInternalServerError:   api.CodeInternalError,
}

// Whatever is asked under /v1, the answer is JSON: the Error body for every
// failure, never HTML and never PocketBase's {data, message, status}. (Fewer
// than 60 requests without a key: the per-IP rate limit of keyless callers.)
func TestEveryV1AnswerIsJSON(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	petPath := fmt.Sprint("/v1/pets/", pet.ID)

	for _, path := range []string{
		"/v1", "/v1/", "/v1/pets", "/v1/pets/", petPath, petPath + "/", "/v1/pets/abc", "/v1/pets/0",
		"/v1/pets?limit=0", "/v1/pets?fields=id", "/v1/pets?expand=x", "/v1//", "/v1/%2e%2e/api/health",
		"/v1/_/", "/v1/api/collections/pets/records",
	} {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			for _, k := range []string{key, ""} {
				t.Run(method+" "+path, func(t *testing.T) {
					var body any
					if method != http.MethodGet {
						body = `{"name": "Tom", "categoryId": 2}`
					}
					r := s.Do(t, method, path, k, body)
					if r.StatusCode >= 300 {
						code, ok := codeOfStatus[r.StatusCode]
						if !ok {
							t.Fatalf("status %d: %s", r.StatusCode, r.Body)
						}
						apptest.ExpectError(t, r, r.StatusCode, code)
						return
					}
					var v any
					r.JSON(t, &v)
					if ct := r.Header.Get("Content-Type"); ct != "application/json" {
						t.Errorf("%d with Content-Type %q", r.StatusCode, ct)
					}
					if obj, ok := v.(map[string]any); ok && obj["data"] != nil {
						t.Errorf("PocketBase's body shape: %s", r.Body)
					}
				})
			}
		}
	}
}

// A failure inside the service is a 500 Error that tells nothing of it.
func TestInternalErrorsShowNoInternals(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	if _, err := s.App.DB().NewQuery("DROP TABLE pets").Execute(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct{ method, path string }{
		{http.MethodGet, "/v1/pets"},
		{http.MethodPost, "/v1/pets"},
		{http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID)},
	} {
		r := s.Do(t, op.method, op.path, key, json.RawMessage(`{"name": "Tom", "categoryId": 2}`))
		apptest.ExpectError(t, r, http.StatusInternalServerError, api.CodeInternalError)
	}
}

// A panic inside a /v1 request is a 500 Error too, and neither its value nor
// a stack trace reaches the client.
func TestPanicIsAnInternalError(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{Middleware: &hook.Handler[*core.RequestEvent]{
		Func: func(e *core.RequestEvent) error { panic("secret-boom") },
	}})
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	r := s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": "Rex", "categoryId": 1})
	apptest.ExpectError(t, r, http.StatusInternalServerError, api.CodeInternalError)
	var whole strings.Builder
	if err := r.Header.Write(&whole); err != nil {
		t.Fatal(err)
	}
	whole.Write(r.Body)
	for _, secret := range []string{"secret-boom", "goroutine"} {
		if strings.Contains(whole.String(), secret) {
			t.Errorf("the response shows %q:\n%s", secret, whole.String())
		}
	}
}
