package pets_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/pocketbase/dbx"

	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// heardRows is what a writer's OnCreated was called with.
type heardRows struct {
	mu   sync.Mutex
	rows map[int64][]pets.Row // by pet id: more than one is a repeat
}

func hearCreated(w *pets.Writer) *heardRows {
	h := &heardRows{rows: map[int64][]pets.Row{}}
	w.OnCreated(func(rows []pets.Row) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, r := range rows {
			h.rows[r.ID] = append(h.rows[r.ID], r)
		}
	})
	return h
}

func (h *heardRows) of(id int64) []pets.Row {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rows[id]
}

func (h *heardRows) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, rows := range h.rows {
		n += len(rows)
	}
	return n
}

// storedCreated is the created column of the pet with id, as stored.
func storedCreated(t *testing.T, s *apptest.Server, id int64) string {
	t.Helper()
	var created string
	err := s.App.ConcurrentDB().NewQuery("SELECT created FROM pets WHERE id = {:id}").
		Bind(dbx.Params{"id": strconv.FormatInt(id, 10)}).Row(&created)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// In a batch, OnCreated hears each committed pet once, with its stored
// fields, before its caller's Run returns; it hears nothing of a create that
// failed or panicked after its insert, or of a work that inserted nothing.
func TestOnCreatedHearsEachCommittedCreateOnce(t *testing.T) {
	s, w := startWriter(t)
	heard := hearCreated(w)
	release := holdWriter(t, w)

	const n = 10
	inserted := make([][]pets.Pet, n) // what each work inserted in its run
	errs := make([]error, n)
	heardOnReturn := make([]int, n) // how many of its pets OnCreated had heard when Run returned
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = w.Run(context.Background(), func(tx *pets.Tx) error {
				inserted[i] = nil
				inserts := 1
				switch i {
				case 6:
					inserts = 2
				case 8:
					inserts = 0
				}
				for j := range inserts {
					pet, err := tx.Insert(pets.NewPet{Name: fmt.Sprintf(" heard-%d-%d ", i, j), CategoryID: int64(i + 1)})
					if err != nil {
						return err
					}
					inserted[i] = append(inserted[i], pet)
				}
				switch i {
				case 2:
					return errors.New("refused after its insert")
				case 4:
					panic("a bug after its insert")
				}
				return nil
			})
			for _, p := range inserted[i] {
				heardOnReturn[i] += len(heard.of(p.ID))
			}
		})
	}
	waitQueued(t, w, n)
	release()
	wg.Wait()

	want := 0
	for i := range n {
		failed := i == 2 || i == 4
		if failed != (errs[i] != nil) {
			t.Errorf("create %d: error %v", i, errs[i])
		}
		if failed {
			if len(inserted[i]) != 1 || len(heard.of(inserted[i][0].ID)) != 0 || heardOnReturn[i] != 0 {
				t.Errorf("create %d failed after its insert, and OnCreated heard of it", i)
			}
			continue
		}
		if heardOnReturn[i] != len(inserted[i]) {
			t.Errorf("create %d: OnCreated had heard %d of its %d pets when Run returned", i, heardOnReturn[i], len(inserted[i]))
		}
		for j, p := range inserted[i] {
			want++
			rows := heard.of(p.ID)
			if len(rows) != 1 {
				t.Errorf("create %d: OnCreated heard pet %d %d times, want once", i, p.ID, len(rows))
				continue
			}
			stored := pets.Pet{ID: p.ID, Name: fmt.Sprintf("heard-%d-%d", i, j), CategoryID: int64(i + 1), Status: pets.DefaultStatus}
			if rows[0].Pet != stored || p != stored {
				t.Errorf("create %d: heard %+v, inserted %+v", i, rows[0].Pet, p)
			}
			if got, want := rows[0].Created, storedCreated(t, s, p.ID); got != want {
				t.Errorf("create %d: heard created %q, stored %q", i, got, want)
			}
		}
	}
	if heard.total() != want {
		t.Errorf("OnCreated heard %d pets, want %d", heard.total(), want)
	}
}

// When SQLite rolls back a whole batch and its creates are written again
// one by one, OnCreated hears each stored pet once, and nothing of the one
// that rolled back.
func TestOnCreatedHearsARolledBackBatchOnce(t *testing.T) {
	s, w := startWriter(t)
	heard := hearCreated(w)
	if _, err := s.App.DB().NewQuery(`CREATE TRIGGER roll_back_all BEFORE INSERT ON pets WHEN NEW.name = 'poison'
		BEGIN SELECT RAISE(ROLLBACK, 'injected failure'); END`).Execute(); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, w)
	names := []string{"first", "second", "poison", "fourth"}
	created := make([]pets.Pet, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { created[i], errs[i] = w.Create(context.Background(), pets.NewPet{Name: name, CategoryID: 2}) })
	}
	waitQueued(t, w, len(names))
	release()
	wg.Wait()
	for i, name := range names {
		if name == "poison" {
			if errs[i] == nil {
				t.Errorf("poison was created")
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
		if got := len(heard.of(created[i].ID)); got != 1 {
			t.Errorf("%s: OnCreated heard it %d times, want once", name, got)
		}
	}
	if heard.total() != len(names)-1 {
		t.Errorf("OnCreated heard %d pets, want %d", heard.total(), len(names)-1)
	}
}

// Row.Record is the record PocketBase reads from the stored row: the same
// JSON, the same values, not new.
func TestRowRecordIsTheStoredRecord(t *testing.T) {
	s, w := startWriter(t)
	heard := hearCreated(w)
	pet, err := w.Create(context.Background(), pets.NewPet{Name: "Rex", CategoryID: pets.MaxCategoryID, Status: "sold"})
	if err != nil {
		t.Fatal(err)
	}
	rows := heard.of(pet.ID)
	if len(rows) != 1 {
		t.Fatalf("OnCreated heard the pet %d times", len(rows))
	}
	collection, err := s.App.FindCachedCollectionByNameOrId(pets.Collection)
	if err != nil {
		t.Fatal(err)
	}
	built, err := rows[0].Record(collection)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.App.FindRecordById(pets.Collection, strconv.FormatInt(pet.ID, 10))
	if err != nil {
		t.Fatal(err)
	}
	builtJSON, _ := json.Marshal(built)
	storedJSON, _ := json.Marshal(stored)
	if string(builtJSON) != string(storedJSON) {
		t.Errorf("built record %s, stored record %s", builtJSON, storedJSON)
	}
	if built.IsNew() {
		t.Error("the built record is new; a stored one is not")
	}
	for _, field := range collection.Fields {
		name := field.GetName()
		if b, s := built.Get(name), stored.Get(name); b != s {
			t.Errorf("%s: built %T %v, stored %T %v", name, b, b, s, s)
		}
	}
}
