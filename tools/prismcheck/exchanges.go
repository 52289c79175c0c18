package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// A request without a valid key counts against the client's network, 60 a
// minute: the exchanges send fewer than 30 of them.

// bigBody is over the 64 KiB every operation refuses with 413.
var bigBody = []byte(`"` + strings.Repeat("p", 70<<10) + `"`)

// exchangeAll sends every exchange, each kind in its own function.
func (c *checker) exchangeAll(k keys) {
	ids := c.createPets(k)
	c.createPetRefusals(k)
	c.listPets(k)
	c.getPet(k, ids)
	c.listCategories(k)
	c.getUsage(k)
	c.documents(k)
	c.rateLimited(k)
	c.outsideTheDocument(k, ids[0])
}

// createPets adds 120 varied pets, replays one and reuses its key, and
// returns the ids.
func (c *checker) createPets(k keys) []int64 {
	names := []string{"Rex", "  Padded  ", "Café 🐈", strings.Repeat("n", 95), "O'Malley \"the cat\"", "名前"}
	categories := []int64{1, 3, 7, 11, 9007199254740991}
	statuses := []string{"", "available", "pending", "sold"}
	var ids []int64
	for i := range 120 {
		pet := map[string]any{"name": fmt.Sprint(names[i%len(names)], " ", i), "categoryId": categories[i%len(categories)]}
		if s := statuses[i%len(statuses)]; s != "" {
			pet["status"] = s
		}
		x := exchange{op: "createPet", method: http.MethodPost, path: "/pets", key: k.writer, body: mustJSON(pet), want: http.StatusCreated}
		if i%3 == 0 {
			x.header = []string{"Idempotency-Key", fmt.Sprint("prismcheck-", i)}
		}
		if _, body := c.send(x); body != nil {
			var created struct{ ID int64 }
			if json.Unmarshal(body, &created) == nil && created.ID > 0 {
				ids = append(ids, created.ID)
			}
		}
	}
	if len(ids) == 0 {
		c.failures = append(c.failures, "createPet: no pet was created")
		return []int64{1}
	}
	// The same key and body again: the first answer, replayed.
	replay := exchange{op: "createPet", method: http.MethodPost, path: "/pets", key: k.writer,
		header: []string{"Idempotency-Key", "prismcheck-replay"}, body: []byte(`{"name": "Twice", "categoryId": 2}`), want: http.StatusCreated}
	c.send(replay)
	if resp, _ := c.send(replay); resp != nil && resp.Header.Get("Idempotent-Replayed") != "true" {
		c.failf(replay, "the second answer is not marked Idempotent-Replayed")
	}
	replay.body, replay.want = []byte(`{"name": "Other", "categoryId": 2}`), http.StatusUnprocessableEntity
	c.send(replay)
	return ids
}

// createPetRefusals sends the bodies, headers and keys createPet refuses.
func (c *checker) createPetRefusals(k keys) {
	post := func(body string, want int, header ...string) exchange {
		return exchange{op: "createPet", method: http.MethodPost, path: "/pets", key: k.writer, body: []byte(body), header: header, want: want}
	}
	for _, body := range []string{
		`{"name": "   ", "categoryId": 1}`,
		`{"name": "` + strings.Repeat("x", 101) + `", "categoryId": 1}`,
		`{"categoryId": 1}`,
		`{"name": "No category"}`,
		`{"name": "Zero", "categoryId": 0}`,
		`{"name": "Negative", "categoryId": -4}`,
		`{"name": "Too big", "categoryId": 9007199254740992}`,
		`{"name": "Fraction", "categoryId": 1.5}`,
		`{"name": "Text", "categoryId": "1"}`,
		`{"name": "Lost", "categoryId": 1, "status": "lost"}`,
		`{"name": "With id", "categoryId": 1, "id": 5}`,
		`{"name": "Extra", "categoryId": 1, "colour": "brown"}`,
		`{"name": 7, "categoryId": 1}`,
		`["Rex", 1]`,
		`null`,
		``,
	} {
		c.send(post(body, http.StatusBadRequest))
	}
	// Prism never answers a JSON body it cannot parse: the binary is asked
	// directly.
	for _, body := range []string{`{"name": "Trailing", "categoryId": 1} {}`, `{"name": "Cut", "categoryId"`} {
		c.sendDirect(post(body, http.StatusBadRequest))
	}
	c.send(post(`{"name": "Key", "categoryId": 1}`, http.StatusBadRequest, "Idempotency-Key", strings.Repeat("k", 256)))
	c.send(post(`{"name": "Key", "categoryId": 1}`, http.StatusBadRequest, "Idempotency-Key", "a key"))
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"} {
		c.send(post(`{"name": "Typed", "categoryId": 1}`, http.StatusUnsupportedMediaType, "Content-Type", ct))
	}
	c.send(post(string(bigBody), http.StatusRequestEntityTooLarge))
	query := post(`{"name": "Query", "categoryId": 1}`, http.StatusBadRequest)
	query.path = "/pets?dryRun=1"
	c.send(query)

	unauthenticated := post(`{"name": "Anonymous", "categoryId": 1}`, http.StatusUnauthorized)
	unauthenticated.key = ""
	c.sendDirect(unauthenticated)
	unauthenticated.key = "pet_unknown"
	c.send(unauthenticated)
	unauthenticated.key = k.revoked
	c.send(unauthenticated)
	scoped := post(`{"name": "Read only", "categoryId": 1}`, http.StatusForbidden)
	scoped.key = k.reader
	c.send(scoped)
}

// listPets walks the pets through Link with several limits and filters,
// and sends the queries listPets refuses.
func (c *checker) listPets(k keys) {
	for _, query := range []string{"limit=7", "", "limit=100", "status=available&limit=10", "status=pending&limit=10", "status=sold&limit=10", "status=sold&limit=1"} {
		c.walk(k.writer, "listPets", "/pets", query, 15)
	}
	for _, query := range []string{"limit=0", "limit=101", "limit=abc", "limit=01", "limit=%2B5", "limit=-1", "limit=", "status=lost",
		"status=", "cursor=junk", "cursor=", "foo=1", "limit=1&limit=2", "status=sold&status=pending"} {
		c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets?" + query, key: k.writer, want: http.StatusBadRequest})
	}
	c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets", key: k.writer, header: []string{"Accept", "application/xml"}, want: http.StatusOK})
	c.sendDirect(exchange{op: "listPets", method: http.MethodGet, path: "/pets", key: k.writer, body: bigBody, want: http.StatusRequestEntityTooLarge})
	c.sendDirect(exchange{op: "listPets", method: http.MethodGet, path: "/pets", want: http.StatusUnauthorized})
	c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets", key: k.revoked, want: http.StatusUnauthorized})
	c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets", key: k.creator, want: http.StatusForbidden})
}

// walk follows Link rel="next" from path?query, at most pages pages.
func (c *checker) walk(key, op, path, query string, pages int) {
	target := path
	if query != "" {
		target += "?" + query
	}
	for range pages {
		resp, _ := c.send(exchange{op: op, method: http.MethodGet, path: target, key: key, want: http.StatusOK})
		if resp == nil {
			return
		}
		next := nextLink(resp.Header.Get("Link"))
		if next == "" {
			return
		}
		u, err := url.Parse(next)
		if err != nil || !strings.HasPrefix(u.Path, "/v1/") {
			c.failures = append(c.failures, fmt.Sprintf("%s %s: Link %q is not under /v1", op, target, next))
			return
		}
		target = strings.TrimPrefix(u.Path, "/v1") + "?" + u.RawQuery
	}
}

// nextLink is the target of a Link header's single rel="next" link, as the
// service writes it, or "".
func nextLink(link string) string {
	target, params, ok := strings.Cut(link, ">")
	if !ok || !strings.Contains(params, `rel="next"`) {
		return ""
	}
	return strings.TrimPrefix(strings.TrimSpace(target), "<")
}

// getPet fetches some of the pets, pets that do not exist, and ids the
// operation refuses.
func (c *checker) getPet(k keys, ids []int64) {
	for _, id := range ids[:min(20, len(ids))] {
		c.send(exchange{op: "getPet", method: http.MethodGet, path: fmt.Sprint("/pets/", id), key: k.writer, want: http.StatusOK})
	}
	for _, id := range []string{"1", "100000000000000", "9007199254740991", "9007199254740992", "9223372036854775807", "0", "-1"} {
		c.send(exchange{op: "getPet", method: http.MethodGet, path: "/pets/" + id, key: k.writer, want: http.StatusNotFound})
	}
	for _, id := range []string{"abc", "007", "1.5", "1e3", "9223372036854775808", "99999999999999999999", "%2B5"} {
		c.send(exchange{op: "getPet", method: http.MethodGet, path: "/pets/" + id, key: k.writer, want: http.StatusBadRequest})
	}
	id := fmt.Sprint("/pets/", ids[0])
	c.send(exchange{op: "getPet", method: http.MethodGet, path: id + "?fields=name", key: k.writer, want: http.StatusBadRequest})
	c.sendDirect(exchange{op: "getPet", method: http.MethodGet, path: id, want: http.StatusUnauthorized})
	c.send(exchange{op: "getPet", method: http.MethodGet, path: id, key: "pet_unknown", want: http.StatusUnauthorized})
	c.send(exchange{op: "getPet", method: http.MethodGet, path: id, key: k.creator, want: http.StatusForbidden})
	c.sendDirect(exchange{op: "getPet", method: http.MethodGet, path: id, key: k.writer, body: bigBody, want: http.StatusRequestEntityTooLarge})
}

// listCategories walks the categories and sends what the operation refuses.
func (c *checker) listCategories(k keys) {
	for _, query := range []string{"limit=1", "limit=2", "", "limit=100"} {
		c.walk(k.writer, "listCategories", "/categories", query, 5)
	}
	c.walk(k.reader, "listCategories", "/categories", "limit=2", 5)
	for _, query := range []string{"limit=0", "limit=101", "limit=x", "cursor=junk", "status=sold", "limit=1&limit=1"} {
		c.send(exchange{op: "listCategories", method: http.MethodGet, path: "/categories?" + query, key: k.writer, want: http.StatusBadRequest})
	}
	c.sendDirect(exchange{op: "listCategories", method: http.MethodGet, path: "/categories", want: http.StatusUnauthorized})
	c.send(exchange{op: "listCategories", method: http.MethodGet, path: "/categories", key: k.creator, want: http.StatusForbidden})
}

// getUsage reads each key's use and sends what the operation refuses.
func (c *checker) getUsage(k keys) {
	c.send(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", key: k.writer, want: http.StatusOK})
	c.send(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", key: k.reader, want: http.StatusOK})
	c.send(exchange{op: "getUsage", method: http.MethodGet, path: "/usage?days=7", key: k.writer, want: http.StatusBadRequest})
	c.sendDirect(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", want: http.StatusUnauthorized})
	c.send(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", key: k.creator, want: http.StatusForbidden})
	c.sendDirect(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", key: k.writer, body: bigBody, want: http.StatusRequestEntityTooLarge})
}

// documents fetches both copies of the document, with and without a key,
// and revalidates them.
func (c *checker) documents(k keys) {
	for _, doc := range []struct{ op, path string }{{"getOpenAPIDocument", "/openapi.json"}, {"getOpenAPIDocumentYAML", "/openapi.yaml"}} {
		resp, _ := c.send(exchange{op: doc.op, method: http.MethodGet, path: doc.path, key: k.writer, want: http.StatusOK})
		c.send(exchange{op: doc.op, method: http.MethodGet, path: doc.path, want: http.StatusOK})
		if resp != nil {
			c.send(exchange{op: doc.op, method: http.MethodGet, path: doc.path, key: k.writer, header: []string{"If-None-Match", resp.Header.Get("ETag")}, want: http.StatusNotModified})
			c.send(exchange{op: doc.op, method: http.MethodGet, path: doc.path, key: k.writer, header: []string{"If-None-Match", `"stale"`}, want: http.StatusOK})
		}
		c.send(exchange{op: doc.op, method: http.MethodGet, path: doc.path + "?format=x", key: k.writer, want: http.StatusBadRequest})
		c.sendDirect(exchange{op: doc.op, method: http.MethodGet, path: doc.path, key: k.writer, body: bigBody, want: http.StatusRequestEntityTooLarge})
	}
}

// rateLimited drives the 3-a-minute key over its limit on each operation.
func (c *checker) rateLimited(k keys) {
	for range 3 {
		c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets?limit=1", key: k.limited, want: http.StatusOK})
	}
	c.send(exchange{op: "listPets", method: http.MethodGet, path: "/pets?limit=1", key: k.limited, want: http.StatusTooManyRequests})
	c.send(exchange{op: "createPet", method: http.MethodPost, path: "/pets", key: k.limited, body: []byte(`{"name": "Limited", "categoryId": 1}`), want: http.StatusTooManyRequests})
	c.send(exchange{op: "getPet", method: http.MethodGet, path: "/pets/1", key: k.limited, want: http.StatusTooManyRequests})
	c.send(exchange{op: "listCategories", method: http.MethodGet, path: "/categories", key: k.limited, want: http.StatusTooManyRequests})
	c.send(exchange{op: "getUsage", method: http.MethodGet, path: "/usage", key: k.limited, want: http.StatusTooManyRequests})
	c.send(exchange{op: "getOpenAPIDocument", method: http.MethodGet, path: "/openapi.json", key: k.limited, want: http.StatusTooManyRequests})
	c.send(exchange{op: "getOpenAPIDocumentYAML", method: http.MethodGet, path: "/openapi.yaml", key: k.limited, want: http.StatusTooManyRequests})
}

// outsideTheDocument sends, to the binary directly, HEAD of every GET and
// the requests no operation describes.
func (c *checker) outsideTheDocument(k keys, id int64) {
	pet := fmt.Sprint("/pets/", id)
	for _, head := range []struct {
		path string
		want int
	}{
		{"/pets?limit=5", http.StatusOK}, {"/pets?limit=0", http.StatusBadRequest}, {pet, http.StatusOK}, {"/pets/1", http.StatusNotFound},
		{"/categories", http.StatusOK}, {"/usage", http.StatusOK}, {"/openapi.json", http.StatusOK}, {"/openapi.yaml", http.StatusOK},
	} {
		c.sendDirect(exchange{op: "HEAD", method: http.MethodHead, path: head.path, key: k.writer, want: head.want})
	}
	for _, other := range []struct{ method, path string }{
		{http.MethodDelete, "/pets"}, {http.MethodPut, pet}, {http.MethodDelete, pet}, {http.MethodPatch, "/categories"},
		{http.MethodPost, "/openapi.json"}, {http.MethodDelete, "/openapi.yaml"},
	} {
		c.sendDirect(exchange{op: "405 (no such method)", method: other.method, path: other.path, key: k.writer, want: http.StatusMethodNotAllowed})
	}
	for _, path := range []string{"/nope", "/pets/", pet + "/toys", "/categories/3"} {
		c.sendDirect(exchange{op: "404 (no such path)", method: http.MethodGet, path: path, key: k.writer, want: http.StatusNotFound})
	}
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
