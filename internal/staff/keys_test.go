package staff_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/apptest"
)

// staffServer is a running app with a superuser's token.
type staffServer struct {
	*apptest.Server
	token string
}

func start(t *testing.T) *staffServer {
	s := apptest.Start(t, "")
	return &staffServer{s, s.SuperuserToken(t, "staff@example.com", "a long enough password")}
}

// key is the staff API's view of a key, with the key itself when just issued.
type key struct {
	ID          string     `json:"id"`
	Key         string     `json:"key"`
	Name        string     `json:"name"`
	Prefix      string     `json:"prefix"`
	Plan        string     `json:"plan"`
	State       string     `json:"state"`
	BannedUntil *time.Time `json:"bannedUntil"`
	Expires     *time.Time `json:"expires"`
	PerMinute   quota      `json:"perMinute"`
	PerDay      quota      `json:"perDay"`
	Today       struct {
		Requests int64 `json:"requests"`
		Limited  int64 `json:"limited"`
	} `json:"today"`
	Previous *struct {
		Prefix string    `json:"prefix"`
		Until  time.Time `json:"until"`
	} `json:"previous"`
}

type quota struct {
	Value int64 `json:"value"`
	Own   bool  `json:"own"`
}

// call sends a staff request as the superuser and decodes a 2xx answer into
// out; it fails the test on any other status than want.
func (s *staffServer) call(t *testing.T, method, path string, body any, want int, out any) *apptest.Response {
	t.Helper()
	r := s.Do(t, method, "/api/petstore"+path, s.token, body)
	if r.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, r.StatusCode, r.Body, want)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("%s %s: Cache-Control %q, want no-store", method, path, cc)
	}
	if out != nil {
		r.JSON(t, out)
	}
	return r
}

func (s *staffServer) create(t *testing.T, body map[string]any) key {
	t.Helper()
	var k key
	s.call(t, http.MethodPost, "/keys", body, http.StatusCreated, &k)
	if !strings.HasPrefix(k.Key, apikeys.Prefix) || k.ID == "" || !strings.HasPrefix(k.Key, k.Prefix) {
		t.Fatalf("created %+v", k)
	}
	return k
}

// v1 is the status of a listPets with apiKey.
func (s *staffServer) v1(t *testing.T, apiKey string) int {
	t.Helper()
	return s.Do(t, http.MethodGet, "/v1/pets", apiKey, nil).StatusCode
}

// snapshot is every stored key, to check that a refused request changed none.
func snapshot(t *testing.T, s *staffServer) string {
	t.Helper()
	records, err := s.App.FindAllRecords(apikeys.Collection)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCreateListAndUse(t *testing.T) {
	s := start(t)
	expires := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	k := s.create(t, map[string]any{"plan": "pro", "name": "shop", "perDay": 500, "expires": expires.Format(time.RFC3339)})
	if k.Plan != "pro" || k.Name != "shop" || k.State != apikeys.StateActive ||
		k.PerMinute != (quota{300, false}) || k.PerDay != (quota{500, true}) || k.Expires == nil || !k.Expires.Equal(expires) {
		t.Errorf("created %+v", k)
	}
	if got := s.v1(t, k.Key); got != http.StatusOK {
		t.Errorf("the new key on /v1: %d", got)
	}
	if r, err := s.App.FindRecordById(apikeys.Collection, k.ID); err != nil || r.GetString(apikeys.HashField) != apikeys.Hash(k.Key) {
		t.Errorf("stored %v, %v", r, err)
	}

	var list []key
	r := s.call(t, http.MethodGet, "/keys", nil, http.StatusOK, &list)
	if len(list) != 1 || list[0].ID != k.ID || list[0].Key != "" || strings.Contains(string(r.Body), k.Key) ||
		list[0].Today.Requests != 1 {
		t.Errorf("list %s, want the key (not the key itself) with 1 request today", r.Body)
	}
}

func TestRollWithGrace(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "name": "shop", "perMinute": 50})
	for range 3 {
		s.v1(t, k.Key)
	}

	var rolled key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 3600}, http.StatusCreated, &rolled)
	if rolled.ID != k.ID || rolled.Key == k.Key || rolled.Prefix == k.Prefix || rolled.PerMinute != (quota{50, true}) ||
		rolled.Previous == nil || rolled.Previous.Prefix != k.Prefix || time.Until(rolled.Previous.Until) < 59*time.Minute {
		t.Fatalf("rolled %+v, was %+v", rolled, k)
	}
	for name, apiKey := range map[string]string{"new": rolled.Key, "old": k.Key} {
		if got := s.v1(t, apiKey); got != http.StatusOK {
			t.Errorf("the %s key during the grace period: %d", name, got)
		}
	}
	// The same key, counted on: 3 + 2 requests today.
	if n, _ := s.App.CountRecords(apikeys.Collection); n != 1 {
		t.Errorf("%d key records after a roll, want 1", n)
	}
	var today []struct {
		Requests int64 `json:"requests"`
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/usage?days=1", nil, http.StatusOK, &today)
	if today[0].Requests != 5 {
		t.Errorf("%d requests today, want 5 across the roll", today[0].Requests)
	}

	// A roll without grace ends both earlier secrets at once.
	var again key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 0}, http.StatusCreated, &again)
	if again.Previous != nil {
		t.Errorf("previous secret after a roll without grace: %+v", again.Previous)
	}
	for name, want := range map[string]int{again.Key: 200, rolled.Key: 401, k.Key: 401} {
		if got := s.v1(t, name); got != want {
			t.Errorf("after the second roll, key %s…: %d, want %d", name[:12], got, want)
		}
	}
}

// The grace period ends: the old secret is refused from then on.
func TestRollGraceEnds(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free"})
	var rolled key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 1}, http.StatusCreated, &rolled)
	if got := s.v1(t, k.Key); got != http.StatusOK {
		t.Fatalf("old key within its second of grace: %d", got)
	}
	time.Sleep(time.Until(rolled.Previous.Until) + 50*time.Millisecond)
	if got := s.v1(t, k.Key); got != http.StatusUnauthorized {
		t.Errorf("old key after its grace: %d, want 401", got)
	}
	if got := s.v1(t, rolled.Key); got != http.StatusOK {
		t.Errorf("new key: %d", got)
	}
}

// Rolling keeps the ban and the counts: it is no way around a quota.
func TestRollKeepsBanAndQuota(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 1})
	for s.v1(t, k.Key) != http.StatusTooManyRequests {
	}
	banned := s.Do(t, http.MethodGet, "/v1/pets", k.Key, nil)
	if !strings.Contains(string(banned.Body), "api_key_banned") {
		t.Fatalf("not banned: %s", banned.Body)
	}
	var rolled key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 60}, http.StatusCreated, &rolled)
	if rolled.State != apikeys.StateBanned || rolled.PerMinute != (quota{1, true}) {
		t.Errorf("rolled %+v, want banned with its own quota", rolled)
	}
	r := s.Do(t, http.MethodGet, "/v1/pets", rolled.Key, nil)
	if r.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "api_key_banned") {
		t.Errorf("rolled key: %d %s, want still banned", r.StatusCode, r.Body)
	}

	// Lifting the ban: the next request passes.
	var lifted key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/lift-ban", nil, http.StatusOK, &lifted)
	if lifted.State != apikeys.StateActive || lifted.BannedUntil != nil {
		t.Errorf("after lift-ban %+v", lifted)
	}
	if got := s.v1(t, rolled.Key); got != http.StatusOK {
		t.Errorf("after lift-ban: %d", got)
	}
}

func TestRevoke(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free"})
	var revoked key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/revoke", nil, http.StatusOK, &revoked)
	if revoked.State != apikeys.StateRevoked {
		t.Errorf("revoked %+v", revoked)
	}
	if got := s.v1(t, k.Key); got != http.StatusUnauthorized {
		t.Errorf("revoked key on /v1: %d", got)
	}
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 0}, http.StatusBadRequest, nil)
}

func TestChangePlanAndQuotas(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 7})
	var changed key
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"plan": "business", "perMinute": 0, "perDay": 123, "name": "renamed"},
		http.StatusOK, &changed)
	if changed.Plan != "business" || changed.PerMinute != (quota{1000, false}) || changed.PerDay != (quota{123, true}) || changed.Name != "renamed" {
		t.Errorf("changed %+v", changed)
	}
}

func TestUsage(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 3})
	for range 5 {
		s.v1(t, k.Key) // 3 pass, 2 are refused
	}
	var days []struct {
		Day      string `json:"day"`
		Requests int64  `json:"requests"`
		Limited  int64  `json:"limited"`
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/usage?days=30", nil, http.StatusOK, &days)
	today := time.Now().UTC()
	if len(days) != 30 || days[0].Day != today.AddDate(0, 0, -29).Format("2006-01-02") {
		t.Fatalf("%d days from %v, want 30 ending today", len(days), days[0])
	}
	last := days[29]
	if last.Day != today.Format("2006-01-02") || last.Requests != 5 || last.Limited != 2 {
		t.Errorf("today %+v, want 5 requests, 2 limited", last)
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/usage", nil, http.StatusOK, &days)
	if len(days) != 30 {
		t.Errorf("default: %d days, want 30", len(days))
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/usage?days=1", nil, http.StatusOK, &days)
	if len(days) != 1 || days[0].Requests != 5 {
		t.Errorf("days=1: %+v", days)
	}
}

// Refusals: the caller's mistakes are a clear 400, 404 or 415, and nothing
// is stored or changed.
func TestBadInput(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free"})
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		message            string
	}{
		{"unknown plan", "POST", "/keys", map[string]any{"plan": "gold"}, 400, `Unknown plan "gold"`},
		{"no plan", "POST", "/keys", map[string]any{"name": "x"}, 400, "A plan is required"},
		{"negative per minute", "POST", "/keys", map[string]any{"plan": "free", "perMinute": -1}, 400, "Quotas must be positive"},
		{"negative per day", "POST", "/keys", map[string]any{"plan": "free", "perDay": -5}, 400, "Quotas must be positive"},
		{"huge quota", "POST", "/keys", map[string]any{"plan": "free", "perDay": 1 << 60}, 400, "Quotas must be at most"},
		{"expiry in the past", "POST", "/keys", map[string]any{"plan": "free", "expires": past}, 400, "The expiry must be in the future"},
		{"bad expiry", "POST", "/keys", map[string]any{"plan": "free", "expires": "tomorrow"}, 400, "Expires must be an RFC 3339 time"},
		{"long name", "POST", "/keys", map[string]any{"plan": "free", "name": strings.Repeat("n", 101)}, 400, "A name has at most 100"},
		{"unknown member", "POST", "/keys", map[string]any{"plan": "free", "key": "pet_mine"}, 400, `unknown field "key"`},
		{"wrong type", "POST", "/keys", map[string]any{"plan": "free", "perDay": "5"}, 400, "PerDay has the wrong type"},
		{"not JSON", "POST", "/keys", "plan=free", 400, "The body must be one JSON object"},
		{"two objects", "POST", "/keys", `{"plan":"free"} {}`, 400, "The body must be one JSON object"},
		{"empty body", "POST", "/keys", "", 400, "The body must be one JSON object"},
		{"roll unknown id", "POST", "/keys/nosuchkey000000/roll", map[string]any{"graceSeconds": 0}, 404, `No API key with id "nosuchkey000000"`},
		{"roll without grace", "POST", "/keys/" + k.ID + "/roll", map[string]any{}, 400, "GraceSeconds is required"},
		{"roll negative grace", "POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": -1}, 400, "GraceSeconds must be from 0 to 2592000"},
		{"roll long grace", "POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": 2592001}, 400, "GraceSeconds must be from 0"},
		{"revoke unknown id", "POST", "/keys/nosuchkey000000/revoke", nil, 404, "No API key with id"},
		{"lift-ban unknown id", "POST", "/keys/nosuchkey000000/lift-ban", nil, 404, "No API key with id"},
		{"change unknown id", "PATCH", "/keys/nosuchkey000000", map[string]any{"name": "x"}, 404, "No API key with id"},
		{"change unknown plan", "PATCH", "/keys/" + k.ID, map[string]any{"plan": "gold", "name": "x"}, 400, `Unknown plan "gold"`},
		{"change negative quota", "PATCH", "/keys/" + k.ID, map[string]any{"perMinute": -2, "name": "x"}, 400, "Quotas must be positive"},
		{"change nothing", "PATCH", "/keys/" + k.ID, map[string]any{}, 400, "Nothing to change"},
		{"usage unknown id", "GET", "/keys/nosuchkey000000/usage", nil, 404, "No API key with id"},
		{"usage days 0", "GET", "/keys/" + k.ID + "/usage?days=0", nil, 400, "Days must be a whole number from 1 to 90"},
		{"usage days 91", "GET", "/keys/" + k.ID + "/usage?days=91", nil, 400, "Days must be"},
		{"usage days 030", "GET", "/keys/" + k.ID + "/usage?days=030", nil, 400, "Days must be"},
		{"usage days twice", "GET", "/keys/" + k.ID + "/usage?days=3&days=4", nil, 400, "Days must be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, s)
			r := s.Do(t, c.method, "/api/petstore"+c.path, s.token, c.body)
			var e struct {
				Status  int    `json:"status"`
				Message string `json:"message"`
			}
			r.JSON(t, &e)
			if r.StatusCode != c.status || e.Status != c.status || !strings.Contains(e.Message, c.message) {
				t.Errorf("%d %s, want %d with %q", r.StatusCode, r.Body, c.status, c.message)
			}
			if snapshot(t, s) != before {
				t.Errorf("a refused request changed the keys")
			}
		})
	}

	r := s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, `{"plan":"free"}`, "Content-Type", "text/plain")
	if r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d %s, want 415", r.StatusCode, r.Body)
	}
}

// Only superusers: no token, an API key or another collection's auth token
// get 401 or 403, and nothing changes.
func TestSuperusersOnly(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 1})
	for s.v1(t, k.Key) != http.StatusTooManyRequests {
	}
	s.v1(t, k.Key) // banned now

	customers := core.NewAuthCollection("customers")
	if err := s.App.Save(customers); err != nil {
		t.Fatal(err)
	}
	customer := core.NewRecord(customers)
	customer.SetEmail("customer@example.com")
	customer.SetPassword("a long enough password")
	if err := s.App.Save(customer); err != nil {
		t.Fatal(err)
	}
	customerToken, err := customer.NewAuthToken()
	if err != nil {
		t.Fatal(err)
	}

	for _, caller := range []struct {
		name, auth string
		status     int
	}{
		{"anonymous", "", 401},
		{"API key", "Bearer " + k.Key, 401},
		{"malformed token", "Bearer nonsense", 401},
		{"other auth collection", customerToken, 403},
	} {
		for _, rt := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/keys", nil},
			{"POST", "/keys", map[string]any{"plan": "free"}},
			{"PATCH", "/keys/" + k.ID, map[string]any{"plan": "enterprise"}},
			{"POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": 0}},
			{"POST", "/keys/" + k.ID + "/revoke", nil},
			{"POST", "/keys/" + k.ID + "/lift-ban", nil},
			{"GET", "/keys/" + k.ID + "/usage", nil},
		} {
			t.Run(caller.name+" "+rt.method+" "+rt.path, func(t *testing.T) {
				before := snapshot(t, s)
				r := s.Do(t, rt.method, "/api/petstore"+rt.path, "", rt.body, "Authorization", caller.auth)
				if r.StatusCode != caller.status || strings.Contains(string(r.Body), k.ID) {
					t.Errorf("%d %s, want %d without the key", r.StatusCode, r.Body, caller.status)
				}
				if snapshot(t, s) != before {
					t.Errorf("the refused request changed the keys")
				}
			})
		}
	}
	if r := s.Do(t, http.MethodGet, "/v1/pets", k.Key, nil); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the key is no longer banned: %d", r.StatusCode)
	}
}

// The usage history is saved at shutdown and read back after a restart.
func TestUsageSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := &staffServer{Server: apptest.Start(t, dir)}
	s.token = s.SuperuserToken(t, "staff@example.com", "a long enough password")
	k := s.create(t, map[string]any{"plan": "free"})
	for range 4 {
		s.v1(t, k.Key)
	}
	s.Stop(t)

	s.Server = apptest.Start(t, dir)
	var days []struct {
		Requests int64 `json:"requests"`
	}
	s.call(t, http.MethodGet, "/keys/"+k.ID+"/usage?days=2", nil, http.StatusOK, &days)
	if len(days) != 2 || days[1].Requests != 4 {
		t.Errorf("after a restart: %+v, want 4 requests today", days)
	}
}
