package api_test

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
	"petstore/testkit/contract"
)

// usageRows is the saved usage of the key with record id keyID, by
// "operation outcome".
func usageRows(t *testing.T, s *apptest.Server, keyID string) map[string]int64 {
	t.Helper()
	var rows []struct {
		Operation string `db:"operation"`
		Outcome   string `db:"outcome"`
		Requests  int64  `db:"requests"`
	}
	err := s.App.DB().Select("operation", "outcome", "SUM(requests) AS requests").From(usage.Collection).
		Where(dbx.HashExp{"api_key": keyID}).GroupBy("operation", "outcome").All(&rows)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range rows {
		got[r.Operation+" "+r.Outcome] = r.Requests
	}
	return got
}

// usageAnswer is getUsage's body.
type usageAnswer struct {
	Plan  string `json:"plan"`
	Today struct {
		Day string `json:"day"`
		usageCounts
	} `json:"today"`
	Month struct {
		Month string `json:"month"`
		usageCounts
	} `json:"month"`
	Limits struct {
		PerMinute, PerDay struct {
			Limit, Remaining int64
			Reset            time.Time
		}
	} `json:"limits"`
	Days []struct {
		Day string `json:"day"`
		usageCounts
	} `json:"days"`
}

type usageCounts struct {
	Requests, Served, Refused, Limited, Failed int64
}

// Known numbers of requests of several operations and outcomes, sent
// through two instances sharing one data directory, are counted exactly:
// by getUsage, with what its instance has not saved yet, and in the rows
// both saved at shutdown, which add up.
func TestUsageCountsEveryRequest(t *testing.T) {
	dir := t.TempDir()
	a := apptest.Start(t, dir)
	b := apptest.Start(t, dir)
	key := a.NewKey(t, apikeys.NewKey{Plan: "pro", PerMinute: 1000, PerDay: 5000})
	id := a.KeyRecord(t, key).Id
	small := a.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 3, PerDay: 1000})
	smallID := a.KeyRecord(t, small).Id
	readOnly := a.NewKey(t, apikeys.NewKey{Plan: "free", Scopes: []apikeys.Scope{apikeys.ScopePetsRead}})
	readOnlyID := a.KeyRecord(t, readOnly).Id
	// Out of scope and, the second time, over its minute: refused by the
	// limit though the scope's 403 answers, counted in no window.
	tiny := a.NewKey(t, apikeys.NewKey{Plan: "free", PerMinute: 1, PerDay: 1000, Scopes: []apikeys.Scope{apikeys.ScopePetsRead}})
	tinyID := a.KeyRecord(t, tiny).Id

	send := func(s *apptest.Server, n int, key, method, path string, body any, status int) {
		t.Helper()
		for range n {
			if r := s.Do(t, method, path, key, body); r.StatusCode != status {
				t.Fatalf("%s %s: %d %s, want %d", method, path, r.StatusCode, r.Body, status)
			}
		}
	}
	pet := map[string]any{"name": "Rex", "categoryId": 1}
	send(a, 5, key, http.MethodGet, "/v1/pets", nil, http.StatusOK)
	send(b, 4, key, http.MethodGet, "/v1/pets", nil, http.StatusOK)
	send(a, 2, key, http.MethodGet, "/v1/pets?limit=0", nil, http.StatusBadRequest)
	send(b, 3, key, http.MethodGet, "/v1/pets/999999", nil, http.StatusNotFound)
	send(a, 2, key, http.MethodPost, "/v1/pets", pet, http.StatusCreated)
	send(b, 1, key, http.MethodPost, "/v1/pets", map[string]any{"name": ""}, http.StatusBadRequest)
	send(a, 1, key, http.MethodGet, "/v1/categories", nil, http.StatusOK)
	send(a, 1, key, http.MethodGet, "/v1/openapi.json", nil, http.StatusOK)
	send(b, 1, key, http.MethodGet, "/v1/nowhere", nil, http.StatusNotFound)
	send(a, 1, key, http.MethodDelete, "/v1/pets", nil, http.StatusMethodNotAllowed)
	send(a, 3, small, http.MethodGet, "/v1/pets", nil, http.StatusOK)
	send(a, 2, small, http.MethodGet, "/v1/pets", nil, http.StatusTooManyRequests)
	send(b, 2, readOnly, http.MethodPost, "/v1/pets", pet, http.StatusForbidden)
	send(b, 1, "", http.MethodGet, "/v1/pets", nil, http.StatusUnauthorized) // no key: no one's use
	send(a, 2, tiny, http.MethodPost, "/v1/pets", pet, http.StatusForbidden)

	// A failure on our side: listPets' table is gone (a page not kept).
	if _, err := a.App.DB().NewQuery("ALTER TABLE pets RENAME TO pets_away").Execute(); err != nil {
		t.Fatal(err)
	}
	send(a, 1, key, http.MethodGet, "/v1/pets?limit=7", nil, http.StatusInternalServerError)
	if _, err := a.App.DB().NewQuery("ALTER TABLE pets_away RENAME TO pets").Execute(); err != nil {
		t.Fatal(err)
	}

	// Instance a answers with what it counted (not yet saved) and what b
	// saved, which is nothing yet: b flushes every 5 seconds.
	r := a.Do(t, http.MethodGet, "/v1/usage", key, nil)
	if r.StatusCode != http.StatusOK || r.Header.Get("API-Stability") != "beta" {
		t.Fatalf("getUsage: %d %s, API-Stability %q", r.StatusCode, r.Body, r.Header.Get("API-Stability"))
	}
	var got usageAnswer
	r.JSON(t, &got)
	// a: 5 listPets served, 2 refused, 1 failed; 2 createPet served; 1
	// listCategories and 1 document served; 1 405 refused.
	onA := usageCounts{Requests: 13, Served: 9, Refused: 3, Failed: 1}
	today := time.Now().UTC().Format(time.DateOnly)
	if got.Today.Day != today || got.Today.usageCounts != onA || got.Plan != "pro" {
		t.Errorf("today %+v on plan %q, want %s %+v on pro", got.Today, got.Plan, today, onA)
	}
	if len(got.Days) != 30 || got.Days[29].Day != today || got.Days[29].usageCounts != onA || got.Days[0].Requests != 0 {
		t.Errorf("days %+v, want 30 ending today with %+v", got.Days, onA)
	}
	if got.Month.Month != today[:7] || got.Month.usageCounts != onA {
		t.Errorf("month %+v, want %s %+v", got.Month, today[:7], onA)
	}
	// The windows are the rate limit's after this request: without Redis,
	// each instance counts its own, and a's holds its 13 requests and this.
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if w := got.Limits.PerDay; w.Limit != 5000 || w.Remaining != 5000-14 || !w.Reset.Equal(midnight) {
		t.Errorf("perDay %+v, want 5000 with 14 counted, resetting at %s", w, midnight)
	}
	if w := got.Limits.PerMinute; w.Limit != 1000 || w.Remaining != 1000-14 || w.Reset.Before(time.Now()) {
		t.Errorf("perMinute %+v, want 1000 with 14 counted", w)
	}

	a.Stop(t)
	b.Stop(t)
	c := apptest.Start(t, dir)
	want := map[string]int64{
		"listPets served": 9, "listPets refused": 2, "listPets failed": 1, "getPet refused": 3,
		"createPet served": 2, "createPet refused": 1, "listCategories served": 1, "getOpenAPIDocument served": 1,
		"other refused": 2, "getUsage served": 1,
	}
	if rows := usageRows(t, c, id); !maps.Equal(rows, want) {
		t.Errorf("saved:\n%v\nwant\n%v", rows, want)
	}
	if rows := usageRows(t, c, smallID); !maps.Equal(rows, map[string]int64{"listPets served": 3, "listPets limited": 2}) {
		t.Errorf("the small key's rows: %v", rows)
	}
	if rows := usageRows(t, c, readOnlyID); !maps.Equal(rows, map[string]int64{"createPet refused": 2}) {
		t.Errorf("the read-only key's rows: %v", rows)
	}
	if rows := usageRows(t, c, tinyID); !maps.Equal(rows, map[string]int64{"createPet refused": 1, "createPet limited": 1}) {
		t.Errorf("the tiny key's rows: %v", rows)
	}
	if n := c.CountRecords(t, usage.Collection); n != int64(len(want)+5) {
		t.Errorf("%d rows, want %d: one per key, hour, operation and outcome", n, len(want)+5)
	}

	// After the restart, getUsage reads it all back.
	c.Do(t, http.MethodGet, "/v1/usage", key, nil).JSON(t, &got)
	all := usageCounts{Requests: 23, Served: 14, Refused: 8, Failed: 1}
	if got.Today.usageCounts != all {
		t.Errorf("today after the restart %+v, want %+v", got.Today, all)
	}
}

// The usage history knows every operation of the document by its route,
// and nothing else: a request's operation is its id there.
func TestOperationsAreTheDocuments(t *testing.T) {
	want := map[string]string{}
	for path, item := range contract.Load(t).Doc.Paths.Map() {
		for method, op := range item.Operations() {
			want[method+" /v1"+path] = op.OperationID
		}
	}
	if !maps.Equal(api.Operations, want) {
		t.Errorf("operations by route:\n%v\nwant the document's\n%v", api.Operations, want)
	}
}

// getUsage takes no query parameter, needs pets:read, and a valid key.
func TestUsageRefusals(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	apptest.ExpectError(t, s.Do(t, http.MethodGet, "/v1/usage?days=7", key, nil), http.StatusBadRequest, "invalid_request")
	apptest.ExpectError(t, s.Do(t, http.MethodGet, "/v1/usage", "", nil), http.StatusUnauthorized, "unauthorized")
	writer := s.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsWrite}})
	outOfScope(t, s.Do(t, http.MethodGet, "/v1/usage", writer, nil), apikeys.ScopePetsRead)
	if r := s.Do(t, http.MethodHead, "/v1/usage", key, nil); r.StatusCode != http.StatusOK || len(r.Body) != 0 {
		t.Errorf("HEAD /v1/usage: %d with %d bytes", r.StatusCode, len(r.Body))
	}
}
