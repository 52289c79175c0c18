package customers_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// staff is a running service and a superuser's token, the credential of the
// dashboard (PocketBase's records API) and the staff page.
type staff struct {
	*apptest.Server
	token string
}

func start(t *testing.T) staff {
	s := apptest.Start(t, "")
	return staff{s, s.StaffToken(t)}
}

// limit is the X-RateLimit-Limit of a listPets with key: its per-minute
// quota, the window that binds first.
func (s staff) limit(t *testing.T, key string) string {
	t.Helper()
	r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("listPets: %d %s", r.StatusCode, r.Body)
	}
	return r.Header.Get("X-RateLimit-Limit")
}

// do sends a staff API request, which must answer status; it returns the
// body decoded.
func (s staff) do(t *testing.T, method, path string, body any, status int) map[string]any {
	t.Helper()
	r := s.Do(t, method, "/api/petstore"+path, s.token, body)
	if r.StatusCode != status {
		t.Fatalf("%s %s %v: %d %s, want %d", method, path, body, r.StatusCode, r.Body, status)
	}
	var v map[string]any
	if len(r.Body) > 0 {
		r.JSON(t, &v)
	}
	return v
}

// trail is the actions of the audit records about the key or customer
// with the given id, oldest first, with their details.
func (s staff) trail(t *testing.T, field, id string) ([]string, []map[string]any) {
	t.Helper()
	var rows []struct {
		Action  string `db:"action"`
		Details string `db:"details"`
	}
	err := s.App.DB().Select("action", "details").From(audit.Collection).Where(dbx.HashExp{field: id}).
		OrderBy("created", "rowid").All(&rows)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	var details []map[string]any
	for _, r := range rows {
		var d map[string]any
		if err := json.Unmarshal([]byte(r.Details), &d); err != nil {
			t.Fatal(err)
		}
		actions, details = append(actions, r.Action), append(details, d)
	}
	return actions, details
}

// A customer's plan is its keys' plan: a key given to a customer moves to
// its plan, at its very next request; a change of the customer's plan
// moves every key of it at once, audited on the customer and on each key;
// a key without a customer is untouched; a key of a customer cannot be put
// on another plan than its customer's; a key's own quota still wins; a key
// taken from its customer keeps the plan it had.
func TestACustomersPlanIsItsKeysPlan(t *testing.T) {
	s := start(t)
	production, staging, alone := s.NewKey(t, apikeys.NewKey{Name: "production"}), s.NewKey(t, apikeys.NewKey{Name: "staging"}),
		s.NewKey(t, apikeys.NewKey{Name: "alone"})
	own := s.NewKey(t, apikeys.NewKey{Name: "own quota", PerMinute: 7})
	for _, k := range []string{production, staging, alone} {
		if got := s.limit(t, k); got != "60" {
			t.Fatalf("a free key's limit %s, want 60", got)
		}
	}

	acme := s.do(t, http.MethodPost, "/customers", map[string]any{"name": " Acme ", "contact": "ops@acme.example", "plan": "pro"}, http.StatusCreated)
	id, _ := acme["id"].(string)
	if acme["name"] != "Acme" || acme["plan"] != "pro" || acme["contact"] != "ops@acme.example" || acme["keys"] != 0.0 {
		t.Errorf("created %v", acme)
	}
	for _, k := range []string{production, staging, own} {
		v := s.do(t, http.MethodPut, "/keys/"+s.KeyRecord(t, k).Id+"/customer", map[string]any{"customer": "acme"}, http.StatusOK)
		if v["customer"] != id || v["plan"] != "pro" {
			t.Errorf("assigned: %v", v)
		}
	}
	for k, want := range map[string]string{production: "300", staging: "300", alone: "60", own: "7"} {
		if got := s.limit(t, k); got != want {
			t.Errorf("after the assignment, limit %s, want %s", got, want)
		}
	}

	changed := s.do(t, http.MethodPatch, "/customers/"+id, map[string]any{"plan": "business"}, http.StatusOK)
	if changed["plan"] != "business" || changed["keys"] != 3.0 || len(changed["keyList"].([]any)) != 3 {
		t.Errorf("changed: %v", changed)
	}
	for k, want := range map[string]string{production: "1000", staging: "1000", alone: "60", own: "7"} {
		if got := s.limit(t, k); got != want {
			t.Errorf("after the customer's plan change, limit %s, want %s", got, want)
		}
	}
	actions, details := s.trail(t, audit.CustomerField, id)
	if !slices.Equal(actions, []string{"customer.created", "customer.changed"}) {
		t.Fatalf("the customer's trail: %v", actions)
	}
	moved := details[1]["keys"].([]any)
	if len(moved) != 3 || details[1]["plan"].(map[string]any)["new"] != "business" || details[1]["plan"].(map[string]any)["old"] != "pro" {
		t.Errorf("customer.changed details %v", details[1])
	}
	productionID := s.KeyRecord(t, production).Id
	if actions, _ := s.trail(t, audit.KeyField, productionID); !slices.Equal(actions,
		[]string{"key.created", "key.quota_changed", "key.customer_changed", "key.quota_changed"}) {
		t.Errorf("the key's trail: %v", actions)
	}

	// A plan of its own for a customer's key is refused, on the staff page
	// and in the dashboard.
	r := s.Do(t, http.MethodPatch, "/api/petstore/keys/"+productionID, s.token, map[string]any{"plan": "free"})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), "belongs to customer Acme, whose plan is business") {
		t.Errorf("a customer's key put on another plan: %d %s", r.StatusCode, r.Body)
	}
	free, err := apikeys.FindPlan(s.App, "free")
	if err != nil {
		t.Fatal(err)
	}
	r = s.Do(t, http.MethodPatch, "/api/collections/api_keys/records/"+productionID, s.token, map[string]any{"plan": free.Id})
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), `"plan":{"code":"validation_api_key_rule"`) {
		t.Errorf("the dashboard put a customer's key on another plan: %d %s", r.StatusCode, r.Body)
	}

	// Taken from its customer, a key keeps its plan, and may change it.
	v := s.do(t, http.MethodPut, "/keys/"+productionID+"/customer", map[string]any{"customer": ""}, http.StatusOK)
	if v["customer"] != "" || v["plan"] != "business" {
		t.Errorf("taken from its customer: %v", v)
	}
	s.do(t, http.MethodPatch, "/keys/"+productionID, map[string]any{"plan": "free"}, http.StatusOK)
	if got := s.limit(t, production); got != "60" {
		t.Errorf("a key taken from its customer and put on free: limit %s", got)
	}
}

// The dashboard (PocketBase's records API) keeps the same rules: a
// customer made there is audited; a key given to a customer there moves to
// its plan; a name taken in another letter case is refused; a customer
// with keys is not deleted, one without is, audited.
func TestCustomersInTheDashboard(t *testing.T) {
	s := start(t)
	key := s.NewKey(t, apikeys.NewKey{})
	pro, err := apikeys.FindPlan(s.App, "pro")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Do(t, http.MethodPost, "/api/collections/customers/records", s.token, map[string]any{"name": "Globex", "plan": pro.Id})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	var c struct{ ID string }
	r.JSON(t, &c)
	r = s.Do(t, http.MethodPost, "/api/collections/customers/records", s.token, map[string]any{"name": "GLOBEX", "plan": pro.Id})
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(r.Body), `"name":{"code":"validation_customer_rule"`) {
		t.Errorf("a taken name: %d %s, want 409", r.StatusCode, r.Body)
	}
	keyID := s.KeyRecord(t, key).Id
	r = s.Do(t, http.MethodPatch, "/api/collections/api_keys/records/"+keyID, s.token, map[string]any{"customer": c.ID})
	if r.StatusCode != http.StatusOK {
		t.Fatalf("assign in the dashboard: %d %s", r.StatusCode, r.Body)
	}
	if got := s.limit(t, key); got != "300" {
		t.Errorf("a key given to a pro customer in the dashboard: limit %s, want 300", got)
	}
	r = s.Do(t, http.MethodDelete, "/api/collections/customers/records/"+c.ID, s.token, nil)
	if r.StatusCode != http.StatusConflict || !strings.Contains(string(r.Body), "has 1 key(s)") {
		t.Errorf("delete a customer with a key: %d %s, want 409", r.StatusCode, r.Body)
	}
	s.do(t, http.MethodPut, "/keys/"+keyID+"/customer", map[string]any{"customer": ""}, http.StatusOK)
	if r := s.Do(t, http.MethodDelete, "/api/collections/customers/records/"+c.ID, s.token, nil); r.StatusCode != http.StatusNoContent {
		t.Errorf("delete a customer without keys: %d %s", r.StatusCode, r.Body)
	}
	if actions, _ := s.trail(t, audit.CustomerField, c.ID); !slices.Equal(actions, []string{"customer.created", "customer.deleted"}) {
		t.Errorf("the customer's trail: %v", actions)
	}
}

// The staff routes' refusals: a missing plan or name, an unknown plan, a
// taken name (409), an unknown customer (404, or 400 about the member for
// an assignment), a member the body may not hold; without a superuser's
// token, 401.
func TestCustomerRoutesRefusals(t *testing.T) {
	s := start(t)
	key := s.NewKey(t, apikeys.NewKey{})
	s.do(t, http.MethodPost, "/customers", map[string]any{"name": "Initech", "plan": "free"}, http.StatusCreated)
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		says         string
	}{
		{http.MethodPost, "/customers", map[string]any{"name": "Umbrella"}, 400, "A plan is required"},
		{http.MethodPost, "/customers", map[string]any{"name": "Umbrella", "plan": "gold"}, 400, `Unknown plan \"gold\"`},
		{http.MethodPost, "/customers", map[string]any{"plan": "free"}, 400, `"name":{"code":"validation_required"`},
		{http.MethodPost, "/customers", map[string]any{"name": "initech", "plan": "free"}, 409, "another customer has this name"},
		{http.MethodPost, "/customers", map[string]any{"name": "Umbrella", "plan": "free", "contact": "not an address"}, 400, `"contact":{"code":"validation_is_email"`},
		{http.MethodPost, "/customers", map[string]any{"name": "Umbrella", "plan": "free", "tier": 1}, 400, "tier"},
		{http.MethodPatch, "/customers/nobody", map[string]any{"name": "X"}, 404, "No such customer."},
		{http.MethodGet, "/customers/nobody", nil, 404, "No such customer."},
		{http.MethodPut, "/keys/" + s.KeyRecord(t, key).Id + "/customer", map[string]any{"customer": "nobody"}, 400, `"customer":{"code":"validation_customer_rule"`},
		{http.MethodPut, "/keys/nokey/customer", map[string]any{"customer": "Initech"}, 404, "No API key"},
	} {
		r := s.Do(t, c.method, "/api/petstore"+c.path, s.token, c.body)
		if r.StatusCode != c.status || !strings.Contains(string(r.Body), c.says) {
			t.Errorf("%s %s %v: %d %s, want %d saying %s", c.method, c.path, c.body, r.StatusCode, r.Body, c.status, c.says)
		}
	}
	list := s.do(t, http.MethodGet, "/customers", nil, http.StatusOK)
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "Initech" {
		t.Errorf("list: %v", list)
	}
	if r := s.Do(t, http.MethodGet, "/api/petstore/customers", key, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("an API key listed the customers: %d %s", r.StatusCode, r.Body)
	}
}
