package staff_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"petstore/internal/apikeys"
)

// The categories' staff routes: a list of named and unnamed numbers with
// their pets; a taken name or number answers 409 with the member under
// data; an unknown number 404; a used category's deletion 409 with how
// many pets use it; without a superuser's token, 401.
func TestCategoryRoutes(t *testing.T) {
	s := start(t)
	key := s.NewKey(t, apikeys.NewKey{})
	s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 4})

	if r := s.Do(t, http.MethodPost, "/api/petstore/categories", s.token, map[string]any{"number": 4, "name": "Dogs"}); r.StatusCode != http.StatusCreated ||
		string(r.Body) != `{"id":4,"name":"Dogs"}`+"\n" {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/categories", s.token, map[string]any{"name": "Cats"}); r.StatusCode != http.StatusCreated ||
		string(r.Body) != `{"id":5,"name":"Cats"}`+"\n" {
		t.Fatalf("create without a number: %d %s", r.StatusCode, r.Body)
	}
	s.CreatePet(t, key, map[string]any{"name": "Stray", "categoryId": 9})
	if r := s.Do(t, http.MethodGet, "/api/petstore/categories", s.token, nil); r.StatusCode != http.StatusOK ||
		string(r.Body) != `{"items":[{"id":4,"name":"Dogs","description":"","pets":1},{"id":5,"name":"Cats","description":"","pets":0},{"id":9,"name":"","description":"","pets":1}]}`+"\n" {
		t.Errorf("list: %d %s", r.StatusCode, r.Body)
	}

	for _, c := range []struct {
		method, path string
		body         any
		status       int
		says         string
	}{
		{http.MethodPost, "/categories", map[string]any{"name": "dogs"}, 409, `"name":{"code":"validation_category_rule"`},
		{http.MethodPost, "/categories", map[string]any{"number": 5, "name": "Birds"}, 409, `"number":{"code":"validation_category_rule"`},
		{http.MethodPost, "/categories", map[string]any{"name": "Birds", "colour": "red"}, 400, "colour"},
		{http.MethodPost, "/categories", map[string]any{"name": strings.Repeat("b", 101)}, 400, `"name":{"code":"validation_max_text_constraint"`},
		{http.MethodPatch, "/categories/6", map[string]any{"name": "Birds"}, 404, "No such category."},
		{http.MethodPatch, "/categories/05", map[string]any{"name": "Birds"}, 404, "No such category."},
		{http.MethodPatch, "/categories/5", map[string]any{"name": "Dogs"}, 409, "another category has this name"},
		{http.MethodDelete, "/categories/4", nil, 409, "Category 4 (Dogs) cannot be deleted: 1 pet uses it."},
	} {
		r := s.Do(t, c.method, "/api/petstore"+c.path, s.token, c.body)
		if r.StatusCode != c.status || !strings.Contains(string(r.Body), c.says) {
			t.Errorf("%s %s %v: %d %s, want %d saying %s", c.method, c.path, c.body, r.StatusCode, r.Body, c.status, c.says)
		}
	}
	if r := s.Do(t, http.MethodPatch, "/api/petstore/categories/5", s.token, map[string]any{"name": "Felines"}); r.StatusCode != http.StatusOK ||
		string(r.Body) != `{"id":5,"name":"Felines"}`+"\n" {
		t.Errorf("rename: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodDelete, "/api/petstore/categories/5", s.token, nil); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete: %d %s", r.StatusCode, r.Body)
	}
	if r := s.Do(t, http.MethodGet, "/api/petstore/categories", key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("an API key listed the staff's categories: %d %s", r.StatusCode, r.Body)
	}
}

// A conflict is one answer at both HTTP edges: the same refusal through the
// staff API and through PocketBase's records API (the dashboard's) is 409
// with the same message and the same member under data.
func TestConflictIsOneAnswerAtBothEdges(t *testing.T) {
	s := start(t)
	key := s.NewKey(t, apikeys.NewKey{})
	s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 4})
	if r := s.Do(t, http.MethodPost, "/api/petstore/categories", s.token, map[string]any{"number": 4, "name": "Dogs"}); r.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	dogs, err := s.App.FindFirstRecordByData("categories", "number", 4)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Status  int
		Message string
		Data    map[string]struct{ Code, Message string }
	}
	for _, c := range []struct {
		conflict      string
		staff, record [2]string // method, path
		staffBody     any
		recordBody    any
	}{
		{"a category that pets carry is deleted",
			[2]string{http.MethodDelete, "/api/petstore/categories/4"}, [2]string{http.MethodDelete, "/api/collections/categories/records/" + dogs.Id}, nil, nil},
		{"a taken name",
			[2]string{http.MethodPost, "/api/petstore/categories"}, [2]string{http.MethodPost, "/api/collections/categories/records"},
			map[string]any{"number": 8, "name": "DOGS"}, map[string]any{"number": 8, "name": "DOGS"}},
		{"a taken number",
			[2]string{http.MethodPost, "/api/petstore/categories"}, [2]string{http.MethodPost, "/api/collections/categories/records"},
			map[string]any{"number": 4, "name": "Wolves"}, map[string]any{"number": 4, "name": "Wolves"}},
	} {
		var answers [2]answer
		for i, edge := range [][2]string{c.staff, c.record} {
			body := c.staffBody
			if i == 1 {
				body = c.recordBody
			}
			r := s.Do(t, edge[0], edge[1], s.token, body)
			if err := json.Unmarshal(r.Body, &answers[i]); err != nil || r.StatusCode != http.StatusConflict || answers[i].Status != http.StatusConflict {
				t.Errorf("%s, %s %s: %d %s, want 409", c.conflict, edge[0], edge[1], r.StatusCode, r.Body)
			}
		}
		staff, record := answers[0], answers[1]
		if staff.Message == "" || staff.Message != record.Message || len(staff.Data) != len(record.Data) {
			t.Errorf("%s: the staff API says %+v, the records API %+v", c.conflict, staff, record)
		}
		for field, said := range staff.Data {
			if record.Data[field] != said {
				t.Errorf("%s: under data, the staff API says %s: %+v, the records API %+v", c.conflict, field, said, record.Data[field])
			}
		}
	}
}
