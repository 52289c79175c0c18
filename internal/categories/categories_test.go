package categories_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/categories"
	"petstore/testkit/apptest"
	"petstore/testkit/contract"
)

// staff is a running service and a superuser's token, the credential of the
// dashboard (PocketBase's records API) and the staff page.
type staff struct {
	*apptest.Server
	token string
}

func start(t *testing.T) staff {
	s := apptest.StartWith(t, apptest.Config{WebhooksAllowPrivate: true})
	return staff{s, s.StaffToken(t)}
}

// record is a categories record as the records API answers it.
type record struct {
	ID     string `json:"id"`
	Number int64  `json:"number"`
	Name   string `json:"name"`
}

// create makes a category in the dashboard's records API.
func (s staff) create(t *testing.T, body map[string]any) record {
	t.Helper()
	r := s.Do(t, http.MethodPost, "/api/collections/categories/records", s.token, body)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("records API create %v: %d %s", body, r.StatusCode, r.Body)
	}
	var rec record
	r.JSON(t, &rec)
	return rec
}

// list is GET /v1/categories with key, which must answer 200 with the
// beta header; it returns the categories and the Link.
func (s staff) list(t *testing.T, key, query string) ([]categories.Category, string) {
	t.Helper()
	r := s.Do(t, http.MethodGet, "/v1/categories"+query, key, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("listCategories: %d %s", r.StatusCode, r.Body)
	}
	if got := r.Header.Get("API-Stability"); got != "beta" {
		t.Errorf("API-Stability %q, want beta", got)
	}
	var list []categories.Category
	r.JSON(t, &list)
	return list, r.Header.Get("Link")
}

// The black-box walk: staff create a category in the dashboard's
// records API; listCategories lists it to a read-only key, with the beta
// header; a pet created with its number is listed by listPets unchanged; a
// rename shows at once; deleting a used category is refused with how many
// pets use it; a key without pets:read gets 403, with the beta header too.
func TestCategoriesBlackBox(t *testing.T) {
	s := start(t)
	readOnly := s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsRead}})
	writeOnly := s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsWrite}})

	dogs := s.create(t, map[string]any{"number": 7, "name": "  Dogs  "})
	if dogs.Number != 7 || dogs.Name != "Dogs" {
		t.Fatalf("created %+v, want number 7 named Dogs (trimmed)", dogs)
	}
	if list, link := s.list(t, readOnly, ""); !slices.Equal(list, []categories.Category{{ID: 7, Name: "Dogs"}}) || link != "" {
		t.Fatalf("listCategories %+v (Link %q), want Dogs alone", list, link)
	}

	s.CreatePet(t, writeOnly, map[string]any{"name": "Rex", "categoryId": 7})
	s.CreatePet(t, writeOnly, map[string]any{"name": "Stray", "categoryId": 99}) // no category: accepted as ever
	r := s.Do(t, http.MethodGet, "/v1/pets", readOnly, nil)
	var listed []map[string]any
	r.JSON(t, &listed)
	categoryOf := map[any]any{}
	for _, p := range listed {
		categoryOf[p["name"]] = p["categoryId"]
		if len(p) != 4 {
			t.Errorf("listPets gave a pet %v, want its id, name, categoryId and status alone", p)
		}
	}
	if len(listed) != 2 || categoryOf["Rex"] != 7.0 || categoryOf["Stray"] != 99.0 || r.Header.Get("API-Stability") != "" {
		t.Errorf("listPets %s (API-Stability %q), want Rex in 7 and Stray in 99, as before categories", r.Body, r.Header.Get("API-Stability"))
	}

	if r := s.Do(t, http.MethodPatch, "/api/collections/categories/records/"+dogs.ID, s.token, map[string]any{"name": "Hounds"}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	if list, _ := s.list(t, readOnly, ""); !slices.Equal(list, []categories.Category{{ID: 7, Name: "Hounds"}}) {
		t.Errorf("after the rename, listCategories %+v", list)
	}

	r = s.Do(t, http.MethodDelete, "/api/collections/categories/records/"+dogs.ID, s.token, nil)
	var refusal struct{ Message string }
	r.JSON(t, &refusal)
	if r.StatusCode != http.StatusConflict || !strings.Contains(refusal.Message, "1 pet uses it") {
		t.Errorf("delete of a used category: %d %s, want 409 saying 1 pet uses it", r.StatusCode, r.Body)
	}
	if list, _ := s.list(t, readOnly, ""); len(list) != 1 {
		t.Errorf("after the refused delete, listCategories %+v", list)
	}

	r = s.Do(t, http.MethodGet, "/v1/categories", writeOnly, nil)
	apptest.ExpectError(t, r, http.StatusForbidden, "insufficient_scope")
	if got := r.Header.Get("API-Stability"); got != "beta" {
		t.Errorf("403: API-Stability %q, want beta", got)
	}
	apptest.ExpectError(t, s.Do(t, http.MethodGet, "/v1/categories", "", nil), http.StatusUnauthorized, "unauthorized")
	petsCursor := base64.RawURLEncoding.EncodeToString([]byte("1:123456789012345"))
	for _, query := range []string{"status=sold", "limit=0", "limit=101", "limit=01", "limit=%2B5", "limit=5&limit=6",
		"cursor=bad", "cursor=" + petsCursor, "cursor=" + base64.RawURLEncoding.EncodeToString([]byte("c1:0")), "a=1;b=2"} {
		r := s.Do(t, http.MethodGet, "/v1/categories?"+query, readOnly, nil)
		apptest.ExpectError(t, r, http.StatusBadRequest, "invalid_request")
		if r.Header.Get("API-Stability") != "beta" {
			t.Errorf("?%s: 400 without API-Stability: beta", query)
		}
	}
	apptest.ExpectError(t, s.Do(t, http.MethodPost, "/v1/categories", readOnly, "{}"), http.StatusMethodNotAllowed, "method_not_allowed")

	// API keys are no PocketBase auth: they cannot write categories.
	if r := s.Do(t, http.MethodPost, "/api/collections/categories/records", writeOnly, map[string]any{"name": "Cats"}); r.StatusCode < 400 {
		t.Errorf("an API key created a category: %d %s", r.StatusCode, r.Body)
	}
}

// Pages follow the Link in number order and visit every category once; a
// category saved without a number gets the next one no category or pet
// uses.
func TestCategoriesPages(t *testing.T) {
	s := start(t)
	key := s.NewKey(t, apikeys.NewKey{})
	s.CreatePet(t, key, map[string]any{"name": "Nemo", "categoryId": 40})
	for _, n := range []int{30, 10, 20} {
		s.create(t, map[string]any{"number": n, "name": "Group " + string(rune('A'+n/10))})
	}
	assigned := s.create(t, map[string]any{"name": "Fish"})
	if assigned.Number != 41 {
		t.Errorf("assigned number %d, want 41 (after pet category 40)", assigned.Number)
	}
	var ids []int64
	next := "?limit=3"
	for next != "" {
		page, link := s.list(t, key, next)
		for _, c := range page {
			ids = append(ids, c.ID)
		}
		next = ""
		if link != "" {
			next = strings.TrimPrefix(strings.TrimSuffix(link, `>; rel="next"`), "</v1/categories")
		}
	}
	if !slices.Equal(ids, []int64{10, 20, 30, 41}) {
		t.Errorf("walked %v, want 10 20 30 41", ids)
	}
}

// Names are unique whatever the letter case, numbers unique and fixed;
// each refusal names its field, where the dashboard shows it: a taken name
// or number is a conflict (409), any other refusal 400.
func TestCategoryRules(t *testing.T) {
	s := start(t)
	dogs := s.create(t, map[string]any{"number": 1, "name": "Dogs"})
	for _, c := range []struct {
		method, path string
		body         map[string]any
		field        string
		status       int
	}{
		{http.MethodPost, "", map[string]any{"name": "DOGS"}, "name", http.StatusConflict},
		{http.MethodPost, "", map[string]any{"number": 1, "name": "Cats"}, "number", http.StatusConflict},
		{http.MethodPost, "", map[string]any{"name": "Cats\u202e"}, "name", http.StatusBadRequest},
		{http.MethodPost, "", map[string]any{"name": "   "}, "name", http.StatusBadRequest},
		{http.MethodPatch, "/" + dogs.ID, map[string]any{"number": 2}, "number", http.StatusBadRequest},
	} {
		r := s.Do(t, c.method, "/api/collections/categories/records"+c.path, s.token, c.body)
		var refusal struct {
			Data map[string]struct{ Message string } `json:"data"`
		}
		r.JSON(t, &refusal)
		if r.StatusCode != c.status || refusal.Data[c.field].Message == "" {
			t.Errorf("%s %v: %d %s, want %d about %s", c.method, c.body, r.StatusCode, r.Body, c.status, c.field)
		}
	}
}

// Each change, from the dashboard and from the categories' functions (the
// command's and the staff page's), is in the audit trail with who made it,
// and reaches the webhooks subscribed to it.
func TestCategoryEventsAndAudit(t *testing.T) {
	s := start(t)
	rcv := newReceiver(t)
	if r := s.Do(t, http.MethodPost, "/api/petstore/webhooks", s.token, map[string]any{"url": rcv.URL,
		"events": []string{"category.created", "category.renamed", "category.deleted"}}); r.StatusCode != http.StatusCreated {
		t.Fatalf("add endpoint: %d %s", r.StatusCode, r.Body)
	}

	cats := s.create(t, map[string]any{"number": 5, "name": "Cats"})
	if r := s.Do(t, http.MethodPatch, "/api/collections/categories/records/"+cats.ID, s.token, map[string]any{"name": "Felines"}); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, "/api/collections/categories/records/"+cats.ID, s.token, nil); r.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.StatusCode, r.Body)
	}
	if _, err := categories.Create(s.App, 6, "Birds", "", audit.CLI); err != nil {
		t.Fatal(err)
	}
	if _, err := categories.Rename(s.App, 6, "Parrots", audit.CLI); err != nil {
		t.Fatal(err)
	}
	if err := categories.Delete(s.App, 6, audit.CLI); err != nil {
		t.Fatal(err)
	}

	want := []string{
		`category.created {"id":5,"name":"Cats"}`,
		`category.renamed {"id":5,"name":"Felines","previousName":"Cats"}`,
		`category.deleted {"id":5,"name":"Felines"}`,
		`category.created {"id":6,"name":"Birds"}`,
		`category.renamed {"id":6,"name":"Parrots","previousName":"Birds"}`,
		`category.deleted {"id":6,"name":"Parrots"}`,
	}
	if got := rcv.wait(t, len(want)); !slices.Equal(got, want) {
		t.Errorf("deliveries\n  %q\nwant\n  %q", got, want)
	}

	var trail []struct{ Action, Category, ActorEmail, Actor string }
	err := s.App.DB().NewQuery("SELECT action, category, actor_email, actor FROM audit_log WHERE category != '' ORDER BY rowid").All(&trail)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range trail {
		got = append(got, r.Action+" "+r.Category+" "+r.ActorEmail+" by "+actorKind(r.Actor))
	}
	wantTrail := []string{
		"category.created 5 staff@example.com by superuser", "category.renamed 5 staff@example.com by superuser",
		"category.deleted 5 staff@example.com by superuser", "category.created 6  by cli", "category.renamed 6  by cli",
		"category.deleted 6  by cli",
	}
	if !slices.Equal(got, wantTrail) {
		t.Errorf("audit trail\n  %q\nwant\n  %q", got, wantTrail)
	}
}

func actorKind(id string) string {
	if id == audit.ActorCLI || id == audit.ActorSystem {
		return id
	}
	return "superuser"
}

// receiver records the type and data of each delivery a loopback endpoint
// receives.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var d struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Errorf("delivery %s: %v", body, err)
		}
		r.mu.Lock()
		r.got = append(r.got, d.Type+" "+string(d.Data))
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// wait waits up to 10 s for n deliveries and returns them.
func (r *receiver) wait(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		got := slices.Clone(r.got)
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
	}
}

// The rules the package checks are the ones the categories collection (its
// migration) enforces, and the document's Category schema states.
func TestRulesMatchTheCollection(t *testing.T) {
	s := apptest.Start(t, "")
	c, err := s.App.FindCollectionByNameOrId(categories.Collection)
	if err != nil {
		t.Fatal(err)
	}
	number := c.Fields.GetByName(categories.NumberField).(*core.NumberField)
	if !number.OnlyInt || number.Min == nil || *number.Min != 1 || number.Max == nil || *number.Max != categories.MaxNumber {
		t.Errorf("number field %+v, want whole numbers from 1 to %d", number, int64(categories.MaxNumber))
	}
	name := c.Fields.GetByName(categories.NameField).(*core.TextField)
	if !name.Required || name.Min != 1 || name.Max != categories.MaxNameLen {
		t.Errorf("name field %+v, want required, 1 to %d characters", name, categories.MaxNameLen)
	}
	schema := contract.Load(t).Doc.Components.Schemas["Category"].Value
	if got := schema.Properties["name"].Value.MaxLength; got == nil || *got != categories.MaxNameLen {
		t.Errorf("the document's Category.name maxLength %v, want %d", got, categories.MaxNameLen)
	}
	if got := schema.Properties["id"].Value.Max; got == nil || *got != categories.MaxNumber {
		t.Errorf("the document's Category.id maximum %v, want %d", got, int64(categories.MaxNumber))
	}
}
