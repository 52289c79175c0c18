package staff_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
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
		Served  int64 `json:"served"`
		Refused int64 `json:"refused"`
	} `json:"today"`
	Previous *struct {
		Prefix string    `json:"prefix"`
		Until  time.Time `json:"until"`
	} `json:"previous"`
	Scopes []string `json:"scopes"`
}

// keyList is a page of the list.
type keyList struct {
	Page       int   `json:"page"`
	PerPage    int   `json:"perPage"`
	TotalItems int   `json:"totalItems"`
	TotalPages int   `json:"totalPages"`
	TotalKeys  int   `json:"totalKeys"`
	Items      []key `json:"items"`
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

// create issues a key; its name is "shop" unless body gives one.
func (s *staffServer) create(t *testing.T, body map[string]any) key {
	t.Helper()
	if _, ok := body["name"]; !ok {
		body["name"] = "shop"
	}
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

// ban sends listPets with apiKey until the key is banned: its quota, then
// its threshold of rejections (limits.MinBanAfter or more).
func (s *staffServer) ban(t *testing.T, apiKey string) {
	t.Helper()
	for range 1000 {
		if r := s.Do(t, http.MethodGet, "/v1/pets", apiKey, nil); strings.Contains(string(r.Body), "api_key_banned") {
			return
		}
	}
	t.Fatal("the key is not banned after 1000 requests")
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

	var list keyList
	r := s.call(t, http.MethodGet, "/keys", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != k.ID || list.Items[0].Key != "" || strings.Contains(string(r.Body), k.Key) ||
		list.Items[0].Today.Served != 1 || list.Items[0].Today.Refused != 0 {
		t.Errorf("list %s, want the key (not the key itself) with 1 request served today", r.Body)
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

	// A roll that names no grace keeps the old secret working for a day.
	var daily key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{}, http.StatusCreated, &daily)
	if daily.Previous == nil || daily.Previous.Prefix != rolled.Prefix ||
		time.Until(daily.Previous.Until) < 23*time.Hour+59*time.Minute || time.Until(daily.Previous.Until) > 24*time.Hour {
		t.Errorf("roll without graceSeconds: previous %+v, want the last secret for a day", daily.Previous)
	}
	rolled = daily

	// A roll with no grace ends both earlier secrets at once.
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
	apptest.Slow(t)
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
	s.ban(t, k.Key)
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
	// Revoking again changes nothing; nothing the staff API takes brings it back.
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/revoke", nil, http.StatusOK, &revoked)
	before := snapshot(t, s)
	for _, body := range []any{
		map[string]any{"revoked": false},
		map[string]any{"revoked": ""},
		map[string]any{"name": "revived", "state": "active"},
	} {
		r := s.Do(t, http.MethodPatch, "/api/petstore/keys/"+k.ID, s.token, body)
		if r.StatusCode != http.StatusBadRequest {
			t.Errorf("PATCH %v on a revoked key: %d %s, want 400", body, r.StatusCode, r.Body)
		}
	}
	if snapshot(t, s) != before {
		t.Errorf("a refused PATCH changed the revoked key")
	}
	if got := s.v1(t, k.Key); got != http.StatusUnauthorized {
		t.Errorf("revoked key on /v1 after the PATCH attempts: %d", got)
	}
}

// A revoked or expired key is not rolled: 409 with why, no key in the
// answer, and nothing changes. An expired key's expiry moved into the
// future makes it usable and rollable again.
func TestNoRollForDeadKeys(t *testing.T) {
	apptest.Slow(t)
	s := start(t)
	revoked := s.create(t, map[string]any{"plan": "free"})
	s.call(t, http.MethodPost, "/keys/"+revoked.ID+"/revoke", nil, http.StatusOK, nil)
	expired := s.create(t, map[string]any{"plan": "free", "expires": time.Now().Add(time.Second).Format(time.RFC3339Nano)})
	time.Sleep(time.Until(*expired.Expires) + 10*time.Millisecond)
	if got := s.v1(t, expired.Key); got != http.StatusUnauthorized {
		t.Fatalf("expired key on /v1: %d", got)
	}

	for _, c := range []struct {
		k    key
		says string
	}{{revoked, "The key is revoked"}, {expired, "The key expired at"}} {
		before := snapshot(t, s)
		r := s.Do(t, http.MethodPost, "/api/petstore/keys/"+c.k.ID+"/roll", s.token, map[string]any{"graceSeconds": 3600})
		var e struct {
			Status  int    `json:"status"`
			Message string `json:"message"`
		}
		r.JSON(t, &e)
		if r.StatusCode != http.StatusConflict || e.Status != http.StatusConflict || !strings.Contains(e.Message, c.says) ||
			strings.Contains(string(r.Body), apikeys.Prefix) {
			t.Errorf("rolling %s: %d %s, want 409 saying %q and no key", c.k.ID, r.StatusCode, r.Body, c.says)
		}
		if snapshot(t, s) != before {
			t.Errorf("the refused roll changed the keys")
		}
		if got := s.v1(t, c.k.Key); got != http.StatusUnauthorized {
			t.Errorf("the dead key on /v1 after the refused roll: %d", got)
		}
	}

	// Moving the expired key's expiry brings it back, and it rolls.
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	var moved key
	s.call(t, http.MethodPatch, "/keys/"+expired.ID, map[string]any{"expires": later.Format(time.RFC3339)}, http.StatusOK, &moved)
	if moved.State != apikeys.StateActive || !moved.Expires.Equal(later) {
		t.Fatalf("after moving the expiry: %+v", moved)
	}
	var rolled key
	s.call(t, http.MethodPost, "/keys/"+expired.ID+"/roll", map[string]any{"graceSeconds": 0}, http.StatusCreated, &rolled)
	if got := s.v1(t, rolled.Key); got != http.StatusOK {
		t.Errorf("the rolled key on /v1: %d", got)
	}
}

// Staff set, move and remove an expiry with PATCH {"expires": ...}; /v1
// follows from the next request.
func TestExpiry(t *testing.T) {
	apptest.Slow(t)
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free"})
	if k.Expires != nil {
		t.Fatalf("new key expires %v, want never", k.Expires)
	}
	set := func(expires any) key {
		t.Helper()
		var changed key
		s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"expires": expires}, http.StatusOK, &changed)
		return changed
	}

	inAnHour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if got := set(inAnHour.Format(time.RFC3339)); got.Expires == nil || !got.Expires.Equal(inAnHour) || got.State != apikeys.StateActive {
		t.Errorf("set: %+v", got)
	}
	// Moved to a second from now: refused once it passes.
	soon := time.Now().Add(time.Second)
	if got := set(soon.Format(time.RFC3339Nano)); got.Expires == nil || !got.Expires.Equal(soon.Truncate(time.Millisecond)) {
		t.Errorf("moved: %+v, want %v", got, soon)
	}
	if got := s.v1(t, k.Key); got != http.StatusOK {
		t.Errorf("before the moved expiry: %d", got)
	}
	time.Sleep(time.Until(soon) + 10*time.Millisecond)
	if got := s.v1(t, k.Key); got != http.StatusUnauthorized {
		t.Errorf("after the moved expiry: %d, want 401", got)
	}
	// Removed: the key never expires, and works again.
	if got := set(nil); got.Expires != nil || got.State != apikeys.StateActive {
		t.Errorf("removed: %+v", got)
	}
	if got := s.v1(t, k.Key); got != http.StatusOK {
		t.Errorf("after removing the expiry: %d, want 200", got)
	}
	// With other changes, in one go.
	var both key
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"name": "till the summer", "expires": inAnHour.Format(time.RFC3339)}, http.StatusOK, &both)
	if both.Name != "till the summer" || both.Expires == nil || !both.Expires.Equal(inAnHour) {
		t.Errorf("name and expiry: %+v", both)
	}

	// A revoked key's expiry no longer changes.
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/revoke", nil, http.StatusOK, nil)
	before := snapshot(t, s)
	r := s.Do(t, http.MethodPatch, "/api/petstore/keys/"+k.ID, s.token, map[string]any{"expires": nil})
	if r.StatusCode != http.StatusConflict {
		t.Errorf("removing a revoked key's expiry: %d %s, want 409", r.StatusCode, r.Body)
	}
	if snapshot(t, s) != before {
		t.Errorf("the refused expiry changed the keys")
	}
}

func TestChangePlanAndQuotas(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 7})
	var changed key
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"plan": "business", "perMinute": 0, "perDay": 123_000, "name": "  renamed  "},
		http.StatusOK, &changed)
	if changed.Plan != "business" || changed.PerMinute != (quota{1000, false}) || changed.PerDay != (quota{123_000, true}) || changed.Name != "renamed" {
		t.Errorf("changed %+v", changed)
	}
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"perMinute": 5000, "perDay": 5000}, http.StatusOK, &changed)
	if changed.PerMinute != (quota{5000, true}) || changed.PerDay != (quota{5000, true}) {
		t.Errorf("equal quotas: %+v", changed)
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

// Refusals: the caller's mistakes are a clear 400, 404, 409 or 415 in
// PocketBase's shape, and nothing is stored or changed.
func TestBadInput(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free"})
	own := s.create(t, map[string]any{"plan": "enterprise", "perMinute": 5000, "perDay": 50_000})
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		message            string
		member             string // the member named under data, if any
	}{
		{"unknown plan", "POST", "/keys", map[string]any{"plan": "gold", "name": "x"}, 400, `Unknown plan "gold"`, ""},
		{"no plan", "POST", "/keys", map[string]any{"name": "x"}, 400, "A plan is required", ""},
		{"negative per minute", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perMinute": -1}, 400, "Quotas must be positive", ""},
		{"negative per day", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perDay": -5}, 400, "Quotas must be positive", ""},
		{"per minute over its bound", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perMinute": apikeys.MaxPerMinute + 1, "perDay": apikeys.MaxPerDay}, 400, "A per-minute quota is at most 1000000000", ""},
		{"per day over its bound", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perDay": 1 << 60}, 400, "A per-day quota is at most 1000000000000", ""},
		{"own per minute above own per day", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perMinute": 100, "perDay": 10}, 400,
			"The per-minute quota, 100 (the key's own), is above the per-day quota, 10 (the key's own)", ""},
		{"plan's per minute above own per day", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perDay": 59}, 400,
			"The per-minute quota, 60 (the plan's), is above the per-day quota, 59 (the key's own)", ""},
		{"own per minute above plan's per day", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perMinute": 1001}, 400,
			"The per-minute quota, 1001 (the key's own), is above the per-day quota, 1000 (the plan's)", ""},
		{"expiry in the past", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "expires": past}, 400, "The expiry must be in the future", ""},
		{"bad expiry", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "expires": "tomorrow"}, 400, "Expires must be an RFC 3339 time", "expires"},
		{"no name", "POST", "/keys", map[string]any{"plan": "free"}, 400, "A name is required", ""},
		{"empty name", "POST", "/keys", map[string]any{"plan": "free", "name": ""}, 400, "A name is required", ""},
		{"blank name", "POST", "/keys", map[string]any{"plan": "free", "name": " \t "}, 400, "A name is required", ""},
		{"long name", "POST", "/keys", map[string]any{"plan": "free", "name": strings.Repeat("n", 101)}, 400, "A name has at most 100", ""},
		{"NUL in name", "POST", "/keys", map[string]any{"plan": "free", "name": "a\x00b"}, 400, "control, text-direction or invisible characters (it holds U+0000)", ""},
		{"ESC in name", "POST", "/keys", map[string]any{"plan": "free", "name": "\x1b[31mred"}, 400, "(it holds U+001B)", ""},
		{"RLO in name", "POST", "/keys", map[string]any{"plan": "free", "name": "shop\u202egnp.exe"}, 400, "(it holds U+202E)", ""},
		{"newline in name", "POST", "/keys", map[string]any{"plan": "free", "name": "two\nlines"}, 400, "(it holds U+000A)", ""},
		{"unknown member", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "key": "pet_mine"}, 400, `Unknown member "key"`, "key"},
		{"member in another case", "POST", "/keys", `{"PLAN": "free", "name": "x"}`, 400, `Unknown member "PLAN": members are case-sensitive, did you mean "plan"?`, "PLAN"},
		{"repeated member", "POST", "/keys", `{"plan": "platinum", "name": "x", "plan": "free"}`, 400, `Member "plan" is given more than once`, "plan"},
		{"repeated member, same value", "POST", "/keys", `{"plan": "free", "name": "x", "name": "x"}`, 400, `Member "name" is given more than once`, "name"},
		{"null name", "POST", "/keys", `{"plan": "free", "name": null}`, 400, "Name cannot be null", "name"},
		{"wrong type", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "perDay": "5"}, 400, "PerDay has the wrong type", "perDay"},
		{"fraction", "POST", "/keys", `{"plan": "free", "name": "x", "perDay": 5.5}`, 400, "PerDay has the wrong type", "perDay"},
		{"not JSON", "POST", "/keys", "plan=free", 400, "The body must be one JSON object", ""},
		{"an array", "POST", "/keys", `[{"plan": "free"}]`, 400, "The body must be one JSON object", ""},
		{"two objects", "POST", "/keys", `{"plan":"free","name":"x"} {}`, 400, "The body must be one JSON object", ""},
		{"unfinished object", "POST", "/keys", `{"plan":"free","name":"x"`, 400, "The body must be one JSON object", ""},
		{"empty body", "POST", "/keys", "", 400, "The body must be one JSON object", ""},
		{"roll unknown id", "POST", "/keys/nosuchkey000000/roll", map[string]any{"graceSeconds": 0}, 404, `No API key with id "nosuchkey000000"`, ""},
		{"roll negative grace", "POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": -1}, 400, "The grace period must be from 0 to 30 days (2592000 seconds).", "graceSeconds"},
		{"roll long grace", "POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": 2592001}, 400, "The grace period must be from 0 to 30 days", "graceSeconds"},
		{"roll grace beyond a duration", "POST", "/keys/" + k.ID + "/roll", map[string]any{"graceSeconds": int64(1) << 62}, 400, "The grace period must be from 0 to 30 days", "graceSeconds"},
		{"roll repeated member", "POST", "/keys/" + k.ID + "/roll", `{"graceSeconds": 0, "graceSeconds": 3600}`, 400, "given more than once", "graceSeconds"},
		{"revoke unknown id", "POST", "/keys/nosuchkey000000/revoke", nil, 404, "No API key with id", ""},
		{"lift-ban unknown id", "POST", "/keys/nosuchkey000000/lift-ban", nil, 404, "No API key with id", ""},
		{"change unknown id", "PATCH", "/keys/nosuchkey000000", map[string]any{"name": "x"}, 404, "No API key with id", ""},
		{"change unknown plan", "PATCH", "/keys/" + k.ID, map[string]any{"plan": "gold", "name": "x"}, 400, `Unknown plan "gold"`, ""},
		{"change negative quota", "PATCH", "/keys/" + k.ID, map[string]any{"perMinute": -2, "name": "x"}, 400, "Quotas must be positive", ""},
		{"change per minute above per day", "PATCH", "/keys/" + k.ID, map[string]any{"perMinute": 2000}, 400, "The per-minute quota, 2000 (the key's own), is above the per-day quota, 1000 (the plan's)", ""},
		{"change per day below per minute", "PATCH", "/keys/" + own.ID, map[string]any{"perDay": 4999}, 400, "The per-minute quota, 5000 (the key's own), is above the per-day quota, 4999", ""},
		{"change to a plan whose day is below the own minute", "PATCH", "/keys/" + own.ID, map[string]any{"plan": "free", "perDay": 0}, 400,
			"The per-minute quota, 5000 (the key's own), is above the per-day quota, 1000 (the plan's)", ""},
		{"change name to empty", "PATCH", "/keys/" + k.ID, map[string]any{"name": ""}, 400, "A name is required", ""},
		{"change name to blank", "PATCH", "/keys/" + k.ID, map[string]any{"name": "   "}, 400, "A name is required", ""},
		{"change name with ESC", "PATCH", "/keys/" + k.ID, map[string]any{"name": "\x1b]0;owned\x07"}, 400, "(it holds U+001B)", ""},
		{"change name to null", "PATCH", "/keys/" + k.ID, `{"name": null}`, 400, "Name cannot be null", "name"},
		{"change expiry to the past", "PATCH", "/keys/" + k.ID, map[string]any{"expires": past}, 400, "The expiry must be in the future", ""},
		{"change expiry to a date", "PATCH", "/keys/" + k.ID, map[string]any{"expires": "2030-01-01"}, 400, "Expires must be an RFC 3339 time", "expires"},
		{"change in another case", "PATCH", "/keys/" + k.ID, `{"Name": "x"}`, 400, `did you mean "name"?`, "Name"},
		{"change nothing", "PATCH", "/keys/" + k.ID, map[string]any{}, 400, "Nothing to change", ""},
		{"unknown scope", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "scopes": []string{"pets:read", "pets:delete"}}, 400,
			`Unknown scope "pets:delete": the scopes are pets:read and pets:write`, ""},
		{"no scope", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "scopes": []string{}}, 400,
			"A key needs at least one scope: pets:read or pets:write", ""},
		{"null scopes", "POST", "/keys", `{"plan": "free", "name": "x", "scopes": null}`, 400, "Scopes cannot be null", "scopes"},
		{"scopes as a string", "POST", "/keys", map[string]any{"plan": "free", "name": "x", "scopes": "pets:read"}, 400, "Scopes has the wrong type", "scopes"},
		{"change to an unknown scope", "PATCH", "/keys/" + k.ID, map[string]any{"scopes": []string{"PETS:READ"}}, 400,
			`Unknown scope "PETS:READ": the scopes are pets:read and pets:write`, ""},
		{"change to no scope", "PATCH", "/keys/" + k.ID, map[string]any{"scopes": []string{}}, 400, "A key needs at least one scope", ""},
		{"usage unknown id", "GET", "/keys/nosuchkey000000/usage", nil, 404, "No API key with id", ""},
		{"usage days 0", "GET", "/keys/" + k.ID + "/usage?days=0", nil, 400, "Days must be a whole number from 1 to 90", ""},
		{"usage days 91", "GET", "/keys/" + k.ID + "/usage?days=91", nil, 400, "Days must be", ""},
		{"usage days 030", "GET", "/keys/" + k.ID + "/usage?days=030", nil, 400, "Days must be", ""},
		{"usage days twice", "GET", "/keys/" + k.ID + "/usage?days=3&days=4", nil, 400, "Days must be", ""},
		{"list unknown state", "GET", "/keys?state=dead", nil, 400, "State must be one of active, banned, revoked, expired", ""},
		{"list unknown sort", "GET", "/keys?sort=plan", nil, 400, "Sort must be one of", ""},
		{"list page 0", "GET", "/keys?page=0", nil, 400, "Page must be a whole number from 1", ""},
		{"list perPage 101", "GET", "/keys?perPage=101", nil, 400, "PerPage must be a whole number from 1 to 100", ""},
		{"list perPage +5", "GET", "/keys?perPage=%2B5", nil, 400, "PerPage must be", ""},
		{"list search twice", "GET", "/keys?search=a&search=b", nil, 400, "Search is given more than once", ""},
		{"list long search", "GET", "/keys?search=" + strings.Repeat("a", 201), nil, 400, "Search has at most 200 characters", ""},
		// A query that url.URL.Query would read in part is refused whole, as /v1 does.
		{"list bad escape", "GET", "/keys?page=2&search=%zz", nil, 400, "The query string is malformed", ""},
		{"list semicolon", "GET", "/keys?page=2;perPage=5", nil, 400, "The query string is malformed", ""},
		{"usage bad escape", "GET", "/keys/" + k.ID + "/usage?days=1&x=%", nil, 400, "The query string is malformed", ""},
		{"history semicolon", "GET", "/keys/" + k.ID + "/history?page=1;x", nil, 400, "The query string is malformed", ""},
		{"list page beyond int64", "GET", "/keys?page=99999999999999999999", nil, 400, "Page must be a whole number from 1", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, s)
			r := s.Do(t, c.method, "/api/petstore"+c.path, s.token, c.body)
			var e struct {
				Status  int                          `json:"status"`
				Message string                       `json:"message"`
				Data    map[string]map[string]string `json:"data"`
			}
			r.JSON(t, &e)
			if r.StatusCode != c.status || e.Status != c.status || !strings.Contains(e.Message, c.message) || e.Data == nil {
				t.Errorf("%d %s, want %d with %q", r.StatusCode, r.Body, c.status, c.message)
			}
			if c.member != "" && (e.Data[c.member]["code"] == "" || e.Data[c.member]["message"] != e.Message) {
				t.Errorf("data %v, want the member %q with a code and the message", e.Data, c.member)
			}
			if snapshot(t, s) != before {
				t.Errorf("a refused request changed the keys")
			}
		})
	}

	// The body's rules are /v1's: JSON in UTF-8, declared so.
	for _, c := range []struct {
		contentType, body string
		status            int
		message           string
	}{
		{"text/plain", `{"plan":"free","name":"x"}`, http.StatusUnsupportedMediaType, "The body must be JSON, sent as Content-Type: application/json."},
		{"application/json; charset=latin1", `{"plan":"free","name":"x"}`, http.StatusUnsupportedMediaType, "The body must be UTF-8 JSON."},
		{"application/json; charset=UTF-8", "{\"plan\":\"free\",\"name\":\"caf\xe9\"}", http.StatusBadRequest, "The body is not valid UTF-8."},
	} {
		before := snapshot(t, s)
		r := s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, c.body, "Content-Type", c.contentType)
		var e struct{ Message string }
		if r.StatusCode != c.status || json.Unmarshal(r.Body, &e) != nil || e.Message != c.message {
			t.Errorf("%s body %q: %d %s, want %d %q", c.contentType, c.body, r.StatusCode, r.Body, c.status, c.message)
		}
		if snapshot(t, s) != before {
			t.Errorf("%s body %q changed the keys", c.contentType, c.body)
		}
	}
}

// chunked hides its length, so that the body goes out chunked.
type chunked struct{ io.Reader }

// The staff body limit, 16 KiB, holds however a body is sent: with a
// length, or chunked (whose last read may bring the end of the body with
// it), at every size around the limit.
// Messages name the plans there are, as staff have edited them in the
// dashboard: a plan added there is offered at once.
func TestPlanNamesComeFromThePlans(t *testing.T) {
	s := start(t)
	plans, err := s.App.FindCollectionByNameOrId(apikeys.PlansCollection)
	if err != nil {
		t.Fatal(err)
	}
	gold := core.NewRecord(plans)
	gold.Load(map[string]any{"name": "gold", "per_minute": 5000, "per_day": 1_000_000})
	if err := s.App.Save(gold); err != nil {
		t.Fatal(err)
	}
	const names = "free, pro, business, enterprise or gold"
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"name": "x"}, "A plan is required: " + names + "."},
		{map[string]any{"name": "x", "plan": "platinum"}, `Unknown plan "platinum": the plans are ` + names + "."},
	} {
		r := s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, c.body)
		var e struct {
			Message string `json:"message"`
		}
		r.JSON(t, &e)
		if r.StatusCode != http.StatusBadRequest || e.Message != c.want {
			t.Errorf("%v: %d %q, want 400 %q", c.body, r.StatusCode, e.Message, c.want)
		}
	}
	s.create(t, map[string]any{"plan": "gold"})
}

func TestBodyLimit(t *testing.T) {
	s := start(t)
	const limit = 16 << 10
	// A valid body of exactly n bytes: spaces pad it before its end.
	body := func(n int) string {
		head := `{"plan": "free", "name": "padded"`
		return head + strings.Repeat(" ", n-len(head)-1) + "}"
	}
	for _, n := range []int{limit - 1, limit, limit + 1, limit + 10, limit + 100, limit + 1000, 2 * limit, 1 << 20} {
		for _, how := range []string{"with a length", "chunked"} {
			var rd io.Reader = strings.NewReader(body(n))
			if how == "chunked" {
				rd = chunked{rd}
			}
			req, err := http.NewRequest(http.MethodPost, s.URL+"/api/petstore/keys", rd)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", s.token)
			before := s.CountRecords(t, apikeys.Collection)
			r := s.Send(t, req)
			want := http.StatusCreated
			if n > limit {
				want = http.StatusRequestEntityTooLarge
			}
			if r.StatusCode != want {
				t.Errorf("%d bytes %s: %d %s, want %d", n, how, r.StatusCode, r.Body, want)
			}
			if created := s.CountRecords(t, apikeys.Collection) - before; (want == http.StatusCreated) != (created == 1) {
				t.Errorf("%d bytes %s: %d keys created", n, how, created)
			}
		}
	}
}

// Only superusers: no token, an API key or another collection's auth token
// get 401 or 403, and nothing changes.
func TestSuperusersOnly(t *testing.T) {
	s := start(t)
	k := s.create(t, map[string]any{"plan": "free", "perMinute": 1})
	s.ban(t, k.Key)

	customers := core.NewAuthCollection("shoppers") // an auth collection of staff's own, not the service's customers
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

// list asks for a page of keys with the query q and returns it.
func (s *staffServer) list(t *testing.T, q string) keyList {
	t.Helper()
	var l keyList
	s.call(t, http.MethodGet, "/keys?"+q, nil, http.StatusOK, &l)
	return l
}

func names(l keyList) []string {
	var n []string
	for _, k := range l.Items {
		n = append(n, k.Name)
	}
	return n
}

// The list is searched, filtered, sorted and paged by the server, and says
// how many keys match and how many there are.
func TestListSearchesSortsAndPages(t *testing.T) {
	s := start(t)
	// Keys created within one millisecond (`created`'s resolution) are
	// ordered by id, which is random: these are created a few apart.
	create := func(body map[string]any) key {
		time.Sleep(3 * time.Millisecond)
		return s.create(t, body)
	}
	alpha := create(map[string]any{"plan": "free", "name": "Alpha shop"})
	beta := create(map[string]any{"plan": "pro", "name": "beta Shop"})
	gamma := create(map[string]any{"plan": "free", "name": "gamma_app"})
	delta := create(map[string]any{"plan": "free", "name": "gammaXapp", "perMinute": 1})
	epsilon := create(map[string]any{"plan": "free", "name": "epsilon", "expires": time.Now().Add(time.Second).Format(time.RFC3339Nano)})
	s.call(t, http.MethodPost, "/keys/"+gamma.ID+"/revoke", nil, http.StatusOK, nil)
	s.ban(t, delta.Key)
	var rolled key
	s.call(t, http.MethodPost, "/keys/"+beta.ID+"/roll", map[string]any{"graceSeconds": 3600}, http.StatusCreated, &rolled)
	time.Sleep(time.Until(*epsilon.Expires) + 10*time.Millisecond)

	all := s.list(t, "")
	if got, want := names(all), []string{"epsilon", "gammaXapp", "gamma_app", "beta Shop", "Alpha shop"}; !slices.Equal(got, want) {
		t.Errorf("default order %q, want newest first %q", got, want)
	}
	if all.Page != 1 || all.PerPage != 50 || all.TotalItems != 5 || all.TotalKeys != 5 || all.TotalPages != 1 {
		t.Errorf("counts %+v", all)
	}

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"search=" + url.QueryEscape(alpha.Key), []string{"Alpha shop"}},
		{"search=" + url.QueryEscape("  "+rolled.Key+"\n"), []string{"beta Shop"}},
		{"search=" + url.QueryEscape(beta.Key), []string{"beta Shop"}}, // the secret before the roll
		{"search=" + url.QueryEscape(apikeys.Prefix+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), nil},
		{"search=" + gamma.ID, []string{"gamma_app"}},
		{"search=SHOP", []string{"beta Shop", "Alpha shop"}},
		{"search=gamma_", []string{"gamma_app"}}, // _ is no wildcard
		{"search=%25", nil},                      // nor is %
		{"search=" + url.QueryEscape(rolled.Prefix+"…"), []string{"beta Shop"}},
		{"search=" + url.QueryEscape(beta.Prefix), []string{"beta Shop"}}, // the old prefix, shown during the grace
		{"search=" + url.QueryEscape(alpha.Prefix[:8]), []string{"Alpha shop"}},
		{"state=revoked", []string{"gamma_app"}},
		{"state=expired", []string{"epsilon"}},
		{"state=banned", []string{"gammaXapp"}},
		{"state=active", []string{"beta Shop", "Alpha shop"}},
		{"state=active&search=alpha", []string{"Alpha shop"}},
		{"state=revoked&search=alpha", nil},
		{"sort=name", []string{"Alpha shop", "beta Shop", "epsilon", "gamma_app", "gammaXapp"}},
		{"sort=-name", []string{"gammaXapp", "gamma_app", "epsilon", "beta Shop", "Alpha shop"}},
		{"sort=created", []string{"Alpha shop", "beta Shop", "gamma_app", "gammaXapp", "epsilon"}},
		{"sort=expires", []string{"epsilon", "gammaXapp", "gamma_app", "beta Shop", "Alpha shop"}},
	} {
		l := s.list(t, c.query)
		if got := names(l); !slices.Equal(got, c.want) || l.TotalItems != len(c.want) || l.TotalKeys != 5 || l.Items == nil {
			t.Errorf("?%s: %q (%d of %d), want %q", c.query, got, l.TotalItems, l.TotalKeys, c.want)
		}
	}

	// Pages of 2: three pages, each key once, in order.
	var paged []string
	for page := 1; page <= 3; page++ {
		l := s.list(t, fmt.Sprintf("sort=name&perPage=2&page=%d", page))
		if l.TotalPages != 3 || l.TotalItems != 5 || l.Page != page || len(l.Items) != min(2, 5-2*(page-1)) {
			t.Errorf("page %d: %+v", page, l)
		}
		paged = append(paged, names(l)...)
	}
	if want := []string{"Alpha shop", "beta Shop", "epsilon", "gamma_app", "gammaXapp"}; !slices.Equal(paged, want) {
		t.Errorf("pages of 2 give %q, want %q", paged, want)
	}
	if l := s.list(t, "page=4&perPage=2"); len(l.Items) != 0 || l.TotalItems != 5 {
		t.Errorf("past the last page: %+v", l)
	}
}

// Staff choose a key's scopes at issue (every scope unless they say) and
// change them later: each change holds from the key's next request on /v1,
// is audited with the scopes before and after, and survives a roll.
func TestScopes(t *testing.T) {
	s := start(t)
	both := []string{"pets:read", "pets:write"}
	if k := s.create(t, map[string]any{"plan": "free"}); !slices.Equal(k.Scopes, both) {
		t.Errorf("a key issued without scopes has %q, want both", k.Scopes)
	}
	if k := s.create(t, map[string]any{"plan": "free", "scopes": []string{"pets:write", " pets:read", "pets:write"}}); !slices.Equal(k.Scopes, both) {
		t.Errorf("scopes given out of order and twice are stored as %q, want %q", k.Scopes, both)
	}

	k := s.create(t, map[string]any{"plan": "free", "scopes": []string{"pets:read"}})
	if !slices.Equal(k.Scopes, []string{"pets:read"}) {
		t.Fatalf("issued read-only: %q", k.Scopes)
	}
	createPet := func(key string) int {
		return s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": "Rex", "categoryId": 1}).StatusCode
	}
	if got := createPet(k.Key); got != http.StatusForbidden {
		t.Errorf("a read-only key creates: %d, want 403", got)
	}

	var changed key
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"scopes": both}, http.StatusOK, &changed)
	if !slices.Equal(changed.Scopes, both) {
		t.Errorf("widened: %q", changed.Scopes)
	}
	if got := createPet(k.Key); got != http.StatusCreated {
		t.Errorf("widened, the next create: %d, want 201", got)
	}
	s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"scopes": []string{"pets:write"}}, http.StatusOK, &changed)
	if got := s.v1(t, k.Key); got != http.StatusForbidden {
		t.Errorf("narrowed to pets:write, the next list: %d, want 403", got)
	}

	var rolled key
	s.call(t, http.MethodPost, "/keys/"+k.ID+"/roll", map[string]any{"graceSeconds": 0}, http.StatusCreated, &rolled)
	if !slices.Equal(rolled.Scopes, []string{"pets:write"}) || s.v1(t, rolled.Key) != http.StatusForbidden || createPet(rolled.Key) != http.StatusCreated {
		t.Errorf("after a roll: scopes %q; want pets:write, held by the new secret", rolled.Scopes)
	}

	var details []string
	for _, r := range auditRows(t, s, k.ID) {
		if r.Action == "key.scopes_changed" {
			details = append(details, r.Details)
		}
	}
	want := []string{
		`{"scopes":{"new":["pets:read","pets:write"],"old":["pets:read"]}}`,
		`{"scopes":{"new":["pets:write"],"old":["pets:read","pets:write"]}}`,
	}
	if !slices.Equal(details, want) {
		t.Errorf("key.scopes_changed details %q, want %q", details, want)
	}
}

// Staff bodies keep "<", ">" and "&" as they are, not as \u003c, \u003e and
// \u0026: in answers, in errors (which keep PocketBase's shape) and in the
// 401 and 413 of the group's middleware.
func TestBodiesAreNotHTMLEscaped(t *testing.T) {
	s := start(t)
	const name = `Tom & Jerry's <shop>`
	k := s.create(t, map[string]any{"plan": "free", "name": name})
	bodies := map[string]*apptest.Response{
		"list":    s.call(t, http.MethodGet, "/keys", nil, http.StatusOK, nil),
		"change":  s.call(t, http.MethodPatch, "/keys/"+k.ID, map[string]any{"name": name + " & co"}, http.StatusOK, nil),
		"history": s.call(t, http.MethodGet, "/keys/"+k.ID+"/history", nil, http.StatusOK, nil),
		"error":   s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, map[string]any{"plan": "<gold>", "name": "x"}),
		"401":     s.Do(t, http.MethodGet, "/api/petstore/keys?search=<x>", "", nil),
		"413":     s.Do(t, http.MethodPost, "/api/petstore/keys", s.token, `{"name":"<`+strings.Repeat(" ", 20<<10)+`>"}`),
	}
	for what, want := range map[string]string{"list": name, "change": name + " & co", "history": name, "error": `Unknown plan \"<gold>\"`} {
		if !strings.Contains(string(bodies[what].Body), want) {
			t.Errorf("%s: %s; want %q in it", what, bodies[what].Body, want)
		}
	}
	for what, status := range map[string]int{"error": 400, "401": 401, "413": 413} {
		r := bodies[what]
		var e struct {
			Status  int            `json:"status"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if r.StatusCode != status || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(r.Body, &e) != nil || e.Status != status || e.Message == "" || e.Data == nil {
			t.Errorf("%s: %d %q %s; want %d and PocketBase's error shape", what, r.StatusCode, r.Header.Get("Content-Type"), r.Body, status)
		}
	}
	for what, r := range bodies {
		for _, escaped := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(string(r.Body), escaped) {
				t.Errorf("%s: %s holds %s", what, r.Body, escaped)
			}
		}
	}
}
