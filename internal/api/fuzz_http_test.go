package api_test

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// FuzzHTTPCreateAndList sends each input through the real server, once as a
// createPet body and once as listPets' query: never a 5xx, always a valid
// success or an Error-shaped 4xx.
func FuzzHTTPCreateAndList(f *testing.F) {
	s := apptest.Start(f, "")
	key := s.NewKey(f, apikeys.NewKey{Plan: "enterprise", PerMinute: 100_000_000, PerDay: 1_000_000_000})
	for _, seed := range []struct{ body, query string }{
		{`{"name":"Rex","categoryId":1}`, "limit=1"},
		{`{"name":" Tom\t","categoryId":9007199254740991,"status":"sold"}`, "status=sold&limit=100"},
		{`{"name":"Rex","categoryId":1,"name":"Max"}`, "limit=5&limit=5"},
		{`{"name":"a\u0000b","categoryId":1}`, "status=%zz"},
		{`{"name":"Rex","categoryId":1e309}`, "limit=5;status=sold"},
		{`{"name":"a","categoryId":1e9223372036854775807}`, "limit=9223372036854775808"},
		{`{"name":"a","categoryId":10e9223372036854775806}`, "limit=1e2"},
		{`{"name":"a","categoryId":1e-9223372036854775808}`, "limit=-1"},
		{`{"name":"a","categoryId":-5e9223372036854775807}`, "limit=99999999999999999999"},
		{`{"name":"a","categoryId":0.5e9223372036854775807}`, "limit=010"},
		{`{"name":"a","categoryId":100e-9223372036854775808}`, "limit=+5"},
		{`{"name":"a","categoryId":1e99999999999999999999}`, "limit=1.0"},
		{`{"name":"a","categoryId":1e2147483648}`, "limit=100"},
		{`{"name":"a","categoryId":90071992547409910e-1}`, "limit=101"},
		{"{\"name\":\"\xff\",\"categoryId\":1}", "cursor=MToxMjM0NTY3ODkwMTIzNDU"},
		{"", "limit=0"},
	} {
		f.Add([]byte(seed.body), seed.query)
	}
	f.Fuzz(func(t *testing.T, body []byte, query string) {
		r := s.Do(t, http.MethodPost, "/v1/pets", key, body)
		switch {
		case r.StatusCode == http.StatusCreated:
			var p pets.Pet
			r.JSON(t, &p)
			if p.ID < 100000000000000 || p.ID > 999999999999999 {
				t.Fatalf("created id %d is not 15 digits", p.ID)
			}
			if p.Status == "" {
				t.Fatalf("created pet %+v without a status", p)
			}
			api.CheckPetFields(t, p.Name, p.CategoryID, p.Status)
		case r.StatusCode == http.StatusBadRequest, r.StatusCode == http.StatusRequestEntityTooLarge:
			r.Error(t, r.StatusCode)
		default:
			t.Fatalf("create %q: status %d: %s", body, r.StatusCode, r.Body)
		}

		// Only what fits in a request line as the query; FuzzParseListQuery
		// covers the rest.
		if strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '#' }) {
			return
		}
		req, err := http.NewRequest(http.MethodGet, s.URL+"/v1/pets?"+query, nil)
		if err != nil || req.URL.RawQuery != query {
			t.Fatalf("query %q: %v", query, err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		r = s.Send(t, req)
		switch r.StatusCode {
		case http.StatusOK:
			checkListed(t, query, r)
		case http.StatusBadRequest:
			r.Error(t, r.StatusCode)
		default:
			t.Fatalf("list ?%s: status %d: %s", query, r.StatusCode, r.Body)
		}
	})
}

// checkListed asserts that a page answered for query is what it asked for:
// a query of known, single, well-formed parameters, and a page within its
// limit and status.
func checkListed(t *testing.T, query string, r *apptest.Response) {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("200 for malformed query %q: %v", query, err)
	}
	for name, values := range q {
		if len(values) != 1 || !slices.Contains([]string{"limit", "status", "cursor"}, name) {
			t.Fatalf("200 for query %q with %q given %d times", query, name, len(values))
		}
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if !bytes.HasPrefix(r.Body, []byte("[")) {
		t.Fatalf("200 body is not an array: %s", r.Body)
	}
	var page []pets.Pet
	r.JSON(t, &page)
	if len(page) > limit {
		t.Fatalf("?%s: %d pets, limit %d", query, len(page), limit)
	}
	for _, p := range page {
		if status := q.Get("status"); status != "" && p.Status != status {
			t.Fatalf("?%s: pet with status %q", query, p.Status)
		}
		api.CheckPetFields(t, p.Name, p.CategoryID, p.Status)
	}
}
