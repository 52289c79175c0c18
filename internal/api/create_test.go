package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// refusedCreate posts body with the headers and asserts an Error with status
// and code that names mention, and that no pet was stored.
func refusedCreate(t *testing.T, s *apptest.Server, key string, body any, status int, code, mention string, header ...string) {
	t.Helper()
	before := s.CountRecords(t, "pets")
	r := s.Do(t, http.MethodPost, "/v1/pets", key, body, header...)
	e := apptest.ExpectError(t, r, status, code)
	if !strings.Contains(e.Message, mention) {
		t.Errorf("message %q does not name %q", e.Message, mention)
	}
	if after := s.CountRecords(t, "pets"); after != before {
		t.Errorf("a refused create stored %d pet(s)", after-before)
	}
}

func TestCreatePetRejectsBadBodies(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	long := strings.Repeat("n", 101)

	tests := []struct {
		name, body, mention string
	}{
		{"no body", "", "body"},
		{"only spaces", "  \n ", "body"},
		{"not JSON", `{name: "Rex"}`, "JSON"},
		{"truncated", `{"name": "Rex", "categoryId": 1`, "JSON"},
		{"trailing data", `{"name": "Rex", "categoryId": 1} x`, "nothing after"},
		{"two objects", `{"name": "Rex", "categoryId": 1}{"name": "Tom", "categoryId": 1}`, "nothing after"},
		{"array", `[{"name": "Rex", "categoryId": 1}]`, "object"},
		{"string", `"Rex"`, "object"},
		{"number", `5`, "object"},
		{"null", `null`, "object"},
		{"not UTF-8", "{\"name\": \"R\xffx\", \"categoryId\": 1}", "UTF-8"},
		{"name missing", `{"categoryId": 1}`, "name"},
		{"name empty", `{"name": "", "categoryId": 1}`, "name"},
		{"name whitespace only", `{"name": " \t\n ", "categoryId": 1}`, "name"},
		{"name 101 characters", `{"name": "` + long + `", "categoryId": 1}`, "name"},
		{"name 101 multibyte characters", `{"name": "` + strings.Repeat("é", 101) + `", "categoryId": 1}`, "name"},
		{"name number", `{"name": 5, "categoryId": 1}`, "name"},
		{"name object", `{"name": {"first": "Rex"}, "categoryId": 1}`, "name"},
		{"name null", `{"name": null, "categoryId": 1}`, "name"},
		{"name control character", `{"name": "R\u0000x", "categoryId": 1}`, "name"},
		{"name text-direction override", `{"name": "Rex\u202Egod", "categoryId": 1}`, "text-direction"},
		{"name line separator", `{"name": "R\u2028x", "categoryId": 1}`, "text-direction"},
		{"name zero-width space", `{"name": "R\u200Bx", "categoryId": 1}`, "invisible"},
		{"name soft hyphen", `{"name": "R\u00ADx", "categoryId": 1}`, "invisible"},
		{"name byte order mark", `{"name": "\uFEFFRex", "categoryId": 1}`, "invisible"},
		{"name tag character", `{"name": "Rex\uDB40\uDC41", "categoryId": 1}`, "invisible"},
		{"categoryId missing", `{"name": "Rex"}`, "categoryId"},
		{"categoryId null", `{"name": "Rex", "categoryId": null}`, "categoryId"},
		{"categoryId fraction", `{"name": "Rex", "categoryId": 1.5}`, "categoryId must be an integer"},
		{"categoryId fraction by exponent", `{"name": "Rex", "categoryId": 15e-1}`, "categoryId must be an integer"},
		{"categoryId fraction beyond float64", `{"name": "Rex", "categoryId": 1.0000000000000001}`, "categoryId must be an integer"},
		{"categoryId tiny", `{"name": "Rex", "categoryId": 1e-400}`, "categoryId must be an integer"},
		{"categoryId zero", `{"name": "Rex", "categoryId": 0}`, "categoryId must be from 1"},
		{"categoryId zero with exponent", `{"name": "Rex", "categoryId": 0.0e5}`, "categoryId must be from 1"},
		{"categoryId negative", `{"name": "Rex", "categoryId": -1}`, "categoryId must be from 1"},
		{"categoryId negative with fraction", `{"name": "Rex", "categoryId": -1.0}`, "categoryId must be from 1"},
		{"categoryId 2^53", `{"name": "Rex", "categoryId": 9007199254740992}`, "categoryId must be from 1"},
		{"categoryId 2^53 with exponent", `{"name": "Rex", "categoryId": 9.007199254740992e15}`, "categoryId must be from 1"},
		{"categoryId over int64", `{"name": "Rex", "categoryId": 99999999999999999999}`, "categoryId must be from 1"},
		{"categoryId huge exponent", `{"name": "Rex", "categoryId": 1e999999999999999999999}`, "categoryId must be from 1"},
		{"categoryId exponent of max int64", `{"name": "Rex", "categoryId": 1e9223372036854775807}`, "categoryId must be from 1"},
		{"categoryId exponent just under max int64", `{"name": "Rex", "categoryId": 10e9223372036854775806}`, "categoryId must be from 1"},
		{"categoryId exponent of min int64", `{"name": "Rex", "categoryId": 1e-9223372036854775808}`, "categoryId must be an integer"},
		{"categoryId exponent past 2^31", `{"name": "Rex", "categoryId": 1e2147483648}`, "categoryId must be from 1"},
		{"categoryId fraction with max exponent", `{"name": "Rex", "categoryId": 0.5e9223372036854775807}`, "categoryId must be from 1"},
		{"categoryId string", `{"name": "Rex", "categoryId": "5"}`, "categoryId"},
		{"categoryId boolean", `{"name": "Rex", "categoryId": true}`, "categoryId"},
		{"status unknown", `{"name": "Rex", "categoryId": 1, "status": "lost"}`, "status"},
		{"status wrong case", `{"name": "Rex", "categoryId": 1, "status": "Sold"}`, "status"},
		{"status null", `{"name": "Rex", "categoryId": 1, "status": null}`, "status"},
		{"status number", `{"name": "Rex", "categoryId": 1, "status": 1}`, "status"},
		{"unknown field", `{"name": "Rex", "categoryId": 1, "colour": "brown"}`, "colour"},
		{"client-sent id", `{"id": 123456789012345, "name": "Rex", "categoryId": 1}`, "id"},
		{"duplicate key", `{"name": "Rex", "name": "Tom", "categoryId": 1}`, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refusedCreate(t, s, key, tt.body, http.StatusBadRequest, api.CodeInvalidRequest, tt.mention)
		})
	}
	t.Run("no body and no Content-Length", func(t *testing.T) {
		refusedCreate(t, s, key, nil, http.StatusBadRequest, api.CodeInvalidRequest, "body", "Content-Type", "application/json")
	})
}

func TestCreatePetAcceptsEdgeValues(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})

	for _, tt := range []struct {
		name string
		body map[string]any
		want pets.Pet
	}{
		{"name of 100 characters", map[string]any{"name": strings.Repeat("n", 100), "categoryId": 1},
			pets.Pet{Name: strings.Repeat("n", 100), CategoryID: 1, Status: "available"}},
		{"name of 100 multibyte characters", map[string]any{"name": strings.Repeat("é", 100), "categoryId": 1},
			pets.Pet{Name: strings.Repeat("é", 100), CategoryID: 1, Status: "available"}},
		{"name of 100 characters once trimmed", map[string]any{"name": "  " + strings.Repeat("n", 100) + "  ", "categoryId": 1},
			pets.Pet{Name: strings.Repeat("n", 100), CategoryID: 1, Status: "available"}},
		{"largest categoryId", map[string]any{"name": "Rex", "categoryId": int64(1<<53 - 1), "status": "pending"},
			pets.Pet{Name: "Rex", CategoryID: 1<<53 - 1, Status: "pending"}},
		{"status sold", map[string]any{"name": "Rex", "categoryId": 1, "status": "sold"},
			pets.Pet{Name: "Rex", CategoryID: 1, Status: "sold"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := s.CreatePet(t, key, tt.body)
			tt.want.ID = p.ID
			if p != tt.want {
				t.Errorf("created %+v, want %+v", p, tt.want)
			}
		})
	}
}

// categoryId is read as JSON Schema reads "integer": any number without a
// fractional part, however it is written (docs/api.md).
func TestCreatePetAcceptsIntegersInAnyNotation(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})

	for number, want := range map[string]int64{
		"1.0":                                  1,
		"1e2":                                  100,
		"1E+2":                                 100,
		"0.7e1":                                7,
		"700e-2":                               7,
		"7.000":                                7,
		"0.0000001e7":                          1,
		"9007199254740991.0":                   1<<53 - 1,
		"9.007199254740991e15":                 1<<53 - 1,
		"90071992547409910e-1":                 1<<53 - 1,
		"1" + strings.Repeat("0", 15) + "e-15": 1,
	} {
		t.Run(number, func(t *testing.T) {
			p := s.CreatePet(t, key, `{"name": "Rex", "categoryId": `+number+`}`)
			if p.CategoryID != want {
				t.Errorf("categoryId %s: created %d, want %d", number, p.CategoryID, want)
			}
		})
	}
}

func TestCreatePetContentType(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	body := `{"name": "Rex", "categoryId": 1}`

	for _, tt := range []struct{ contentType, mention string }{
		{"text/plain", "application/json"},
		{"", "application/json"}, // none
		{"application/json;charset=latin1", "UTF-8"},
		{"application/jsonx", "application/json"},
		{"application/x-www-form-urlencoded", "application/json"},
		{"multipart/form-data; boundary=x", "application/json"},
		{"application/problem+json", "application/json"},
		{"application/json; charset", "application/json"}, // not a media type
	} {
		t.Run("refuses "+tt.contentType, func(t *testing.T) {
			refusedCreate(t, s, key, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType, tt.mention,
				"Content-Type", tt.contentType)
		})
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8"} {
		t.Run("accepts "+ct, func(t *testing.T) {
			r := s.Do(t, http.MethodPost, "/v1/pets", key, body, "Content-Type", ct)
			if r.StatusCode != http.StatusCreated {
				t.Errorf("%d %s", r.StatusCode, r.Body)
			}
		})
	}
}

// A body over 64 KiB is refused with 413, whether its length is announced or
// it arrives chunked; a body of exactly 64 KiB is read.
func TestCreatePetBodyLimit(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "business"})
	// A valid NewPet padded with spaces to n bytes.
	bodyOf := func(n int) []byte {
		b := []byte(`{"name": "Rex", "categoryId": 1}`)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}

	for _, chunked := range []bool{false, true} {
		send := func(t *testing.T, body []byte) *apptest.Response {
			var rd io.Reader = bytes.NewReader(body)
			if chunked {
				// A pipe has no known length, so the client sends it chunked.
				pr, pw := io.Pipe()
				go func() { _, err := pw.Write(body); pw.CloseWithError(err) }()
				rd = pr
			}
			req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", rd)
			if err != nil {
				t.Fatal(err)
			}
			if chunked && req.ContentLength != 0 {
				t.Fatalf("ContentLength %d: the body would not be chunked", req.ContentLength)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key)
			return s.Send(t, req)
		}
		name := map[bool]string{false: "with Content-Length", true: "chunked"}[chunked]

		t.Run(name+" at the limit", func(t *testing.T) {
			if r := send(t, bodyOf(64<<10)); r.StatusCode != http.StatusCreated {
				t.Errorf("64 KiB: %d %s", r.StatusCode, r.Body)
			}
		})
		for _, size := range []int{64<<10 + 1, 70 << 10, 1 << 20} {
			t.Run(name+" over the limit", func(t *testing.T) {
				before := s.CountRecords(t, "pets")
				apptest.ExpectError(t, send(t, bodyOf(size)), http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge)
				if s.CountRecords(t, "pets") != before {
					t.Errorf("a %d-byte body stored a pet", size)
				}
			})
		}
	}
}
