package pets_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// A superuser subscribed to pets hears a pet created through /v1 as it
// hears one created with the records API (the dashboard's way): the same
// create message, with the record as PocketBase shows it. A guest
// subscribed to pets hears neither: PocketBase's broadcast applies the
// collection's rules (superusers only) to both.
func TestRealtimeSubscribersHearV1Creates(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.StaffToken(t)
	key := s.NewKey(t, apikeys.NewKey{})
	staff := s.ConnectRealtime(t)
	staff.Subscribe(t, token, "pets/*")
	guest := s.ConnectRealtime(t)
	guest.Subscribe(t, "", "pets/*")

	pet := s.CreatePet(t, key, map[string]any{"name": "  Rex  ", "categoryId": 7})
	fromV1 := staff.NextRecord(t, "pets/*")
	id := strconv.FormatInt(pet.ID, 10)
	if fromV1.Action != "create" || fromV1.Record["id"] != id || fromV1.Record["name"] != "Rex" ||
		fromV1.Record["categoryId"] != 7.0 || fromV1.Record["status"] != "available" ||
		fromV1.Record["collectionName"] != pets.Collection ||
		fromV1.Record["created"] == "" || fromV1.Record["created"] != fromV1.Record["updated"] {
		t.Errorf("/v1 create of %+v: realtime message %+v", pet, fromV1)
	}
	// What the records API shows of the pet is what the message carried.
	var viewed map[string]any
	s.Do(t, http.MethodGet, "/api/collections/pets/records/"+id, "", nil, "Authorization", token).JSON(t, &viewed)
	if !maps.Equal(viewed, fromV1.Record) {
		t.Errorf("realtime record %v, records API view %v", fromV1.Record, viewed)
	}

	r := s.Do(t, http.MethodPost, "/api/collections/pets/records", "", map[string]any{"name": "Tom", "categoryId": 3},
		"Authorization", token)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("records API create: %d %s", r.StatusCode, r.Body)
	}
	var created map[string]any
	r.JSON(t, &created)
	fromRecordsAPI := staff.NextRecord(t, "pets/*")
	if fromRecordsAPI.Action != "create" || !maps.Equal(fromRecordsAPI.Record, created) {
		t.Errorf("records API create %v: realtime message %+v", created, fromRecordsAPI)
	}
	if a, b := shape(fromV1.Record), shape(fromRecordsAPI.Record); a != b {
		t.Errorf("the /v1 create's record is %s, the records API create's %s", a, b)
	}

	// The guest's messages, had there been any, went out with the staff's.
	select {
	case ev := <-guest.Events:
		t.Errorf("a guest heard %q %s", ev.Name, ev.Data)
	case <-time.After(500 * time.Millisecond):
	}
}

// shape is a JSON object's keys with their values' types.
func shape(m map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%T", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// afterCreates counts what the after-create hooks heard of pets, by id.
type afterCreates struct {
	mu      sync.Mutex
	records map[string][]*core.Record
	models  map[string]int
}

func hearAfterCreates(app core.App) *afterCreates {
	h := &afterCreates{records: map[string][]*core.Record{}, models: map[string]int{}}
	app.OnRecordAfterCreateSuccess(pets.Collection).BindFunc(func(e *core.RecordEvent) error {
		h.mu.Lock()
		h.records[e.Record.Id] = append(h.records[e.Record.Id], e.Record)
		h.mu.Unlock()
		return e.Next()
	})
	app.OnModelAfterCreateSuccess(pets.Collection).BindFunc(func(e *core.ModelEvent) error {
		h.mu.Lock()
		h.models[fmt.Sprint(e.Model.PK())]++
		h.mu.Unlock()
		return e.Next()
	})
	return h
}

// total is how many creates the record hook heard.
func (h *afterCreates) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, rs := range h.records {
		n += len(rs)
	}
	return n
}

// once checks that both hooks heard the pet exactly once, and returns the
// record the record hook got.
func (h *afterCreates) once(t *testing.T, pet pets.Pet) *core.Record {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	id := strconv.FormatInt(pet.ID, 10)
	if len(h.records[id]) != 1 || h.models[id] != 1 {
		t.Errorf("pet %s: heard by the record hook %d times and by the model hook %d times, want once each",
			id, len(h.records[id]), h.models[id])
		return nil
	}
	return h.records[id][0]
}

// The after-create hooks hear each pet /v1 creates once, with the stored
// record, before its 201; never a replay by Idempotency-Key, a refused
// create, or one that rolled back; and each pet of a batch once.
func TestAfterCreateHooksHearEachV1CreateOnce(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	heard := hearAfterCreates(s.App)
	expectTotal := func(want int) {
		t.Helper()
		if got := heard.total(); got != want {
			t.Fatalf("the hooks heard %d creates, want %d", got, want)
		}
	}

	// Heard before the 201 arrives, with the record as stored.
	pet := s.CreatePet(t, key, map[string]any{"name": "  Rex  ", "categoryId": 7})
	record := heard.once(t, pet)
	stored, err := s.App.FindRecordById(pets.Collection, strconv.FormatInt(pet.ID, 10))
	if err != nil {
		t.Fatal(err)
	}
	if record == nil || record.IsNew() || record.Collection().Name != pets.Collection ||
		record.GetString("name") != "Rex" || record.GetInt("categoryId") != 7 || record.GetString("status") != "available" ||
		record.GetDateTime("created").IsZero() || !maps.Equal(record.PublicExport(), stored.PublicExport()) {
		t.Errorf("the hook's record %v, stored %v", record, stored.PublicExport())
	}
	expectTotal(1)

	// Refused: nothing heard.
	apptest.ExpectError(t, s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"categoryId": 7}), http.StatusBadRequest, "invalid_request")
	expectTotal(1)

	// With an Idempotency-Key: the create is heard, its replays are not.
	body := map[string]any{"name": "Once", "categoryId": 2}
	first := s.Do(t, http.MethodPost, "/v1/pets", key, body, "Idempotency-Key", "order-1")
	if first.StatusCode != http.StatusCreated {
		t.Fatalf("create with a key: %d %s", first.StatusCode, first.Body)
	}
	var once pets.Pet
	first.JSON(t, &once)
	heard.once(t, once)
	for range 2 {
		replay := s.Do(t, http.MethodPost, "/v1/pets", key, body, "Idempotency-Key", "order-1")
		if replay.StatusCode != http.StatusCreated || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", replay.StatusCode, replay.Body)
		}
	}
	apptest.ExpectError(t, s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": "Other", "categoryId": 2},
		"Idempotency-Key", "order-1"), http.StatusUnprocessableEntity, "idempotency_key_reused")
	for range 2 { // a refused body is remembered and replayed, never created
		apptest.ExpectError(t, s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": ""},
			"Idempotency-Key", "order-2"), http.StatusBadRequest, "invalid_request")
	}
	heard.once(t, once)
	expectTotal(2)

	// Creates that arrive together, some with a key, and one that SQLite
	// rolls back with its whole transaction: the others are written again
	// one by one, and each is heard once.
	if _, err := s.App.DB().NewQuery(`CREATE TRIGGER roll_back_all BEFORE INSERT ON pets WHEN NEW.name = 'poison'
		BEGIN SELECT RAISE(ROLLBACK, 'injected failure'); END`).Execute(); err != nil {
		t.Fatal(err)
	}
	const n = 40
	created := make([]pets.Pet, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name, header := fmt.Sprint("batch-", i), []string(nil)
			switch {
			case i == n/2:
				name = "poison"
			case i%2 == 0:
				header = []string{"Idempotency-Key", fmt.Sprint("batch-", i)}
			}
			r := s.Do(t, http.MethodPost, "/v1/pets", key, map[string]any{"name": name, "categoryId": 1}, header...)
			if name == "poison" {
				apptest.ExpectError(t, r, http.StatusInternalServerError, "internal_error")
				return
			}
			if r.StatusCode != http.StatusCreated {
				t.Errorf("create %d: %d %s", i, r.StatusCode, r.Body)
				return
			}
			r.JSON(t, &created[i])
		})
	}
	wg.Wait()
	for i, p := range created {
		if i != n/2 {
			heard.once(t, p)
		}
	}
	expectTotal(2 + n - 1)
}

// A failing or panicking after-create hook is logged; the pet stays
// created and its client gets the 201.
func TestAFailingAfterCreateHookKeepsThe201(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	s.App.OnRecordAfterCreateSuccess(pets.Collection).BindFunc(func(e *core.RecordEvent) error {
		switch e.Record.GetString("name") {
		case "Grumpy":
			return errors.New("a self-hoster's hook failed")
		case "Panicky":
			panic("a self-hoster's hook panicked")
		}
		return e.Next()
	})
	for _, name := range []string{"Grumpy", "Panicky"} {
		pet := s.CreatePet(t, key, map[string]any{"name": name, "categoryId": 1})
		if _, err := s.App.FindRecordById(pets.Collection, strconv.FormatInt(pet.ID, 10)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Nobody listens to an app that serves with PocketBase's and petstore's
// hooks alone and no realtime subscription to pets: then /v1 builds no
// record and fires nothing. A handler bound to either after-create hook (for
// any collection), or a realtime client subscribed to pets or to one pet,
// by the collection's name or id, is somebody; a subscription to other
// collections is not.
func TestPetCreatesAreHeardOnlyWhenSomebodyListens(t *testing.T) {
	s := apptest.Start(t, "")
	token := s.StaffToken(t)
	expect := func(what string, want bool) {
		t.Helper()
		got, err := pets.CreatesHeard(s.App)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: heard %v, want %v", what, got, want)
		}
	}
	expect("the app as it serves", false)

	id := s.App.OnRecordAfterCreateSuccess("users").BindFunc(func(e *core.RecordEvent) error { return e.Next() })
	expect("a record hook on another collection", true)
	s.App.OnRecordAfterCreateSuccess().Unbind(id)
	expect("the record hook unbound", false)
	id = s.App.OnModelAfterCreateSuccess().BindFunc(func(e *core.ModelEvent) error { return e.Next() })
	expect("a model hook", true)
	s.App.OnModelAfterCreateSuccess().Unbind(id)
	expect("the model hook unbound", false)

	collection, err := s.App.FindCachedCollectionByNameOrId(pets.Collection)
	if err != nil {
		t.Fatal(err)
	}
	c := s.ConnectRealtime(t)
	expect("a realtime client without subscriptions", false)
	for _, sub := range []struct {
		topic string
		heard bool
	}{
		{"users/*", false},
		{"petsitters/*", false},
		{"pets/*", true},
		{"pets", true},
		{"pets/100000000000001", true},
		{`pets/*?options={"query":{"filter":"status='sold'"}}`, true},
		{collection.Id + "/*", true},
		{collection.Id, true},
	} {
		c.Subscribe(t, token, sub.topic)
		expect("a realtime subscription to "+sub.topic, sub.heard)
	}
	c.Close()
	for deadline := time.Now().Add(10 * time.Second); s.App.SubscriptionsBroker().TotalClients() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the realtime client is still registered 10 s after it closed")
		}
	}
	expect("the realtime client gone", false)
}
