package pets_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// startWriter runs a writer of its own on a new app's database.
func startWriter(t *testing.T) (*apptest.Server, *pets.Writer) {
	t.Helper()
	s := apptest.Start(t, "")
	w, err := pets.StartWriter(s.App)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return s, w
}

// holdWriter makes the writer's next transaction wait until the returned
// function is called, and returns once it waits.
func holdWriter(t *testing.T, w *pets.Writer) (release func()) {
	t.Helper()
	held, done := make(chan struct{}), make(chan struct{})
	go func() {
		err := w.Run(context.Background(), func(*pets.Tx) error {
			close(held)
			<-done
			return nil
		})
		if err != nil {
			t.Errorf("holding write: %v", err)
		}
	}()
	<-held
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release)
	return release
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(t *testing.T, w *pets.Writer, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); w.Queued() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", w.Queued(), n)
		}
	}
}

// committed reports whether a pet with id is visible to a reader, which
// sees only committed transactions.
func committed(t *testing.T, s *apptest.Server, id int64) bool {
	t.Helper()
	var n int
	err := s.App.ConcurrentDB().NewQuery("SELECT COUNT(*) FROM pets WHERE id = {:id}").
		Bind(dbx.Params{"id": fmt.Sprint(id)}).Row(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func named(t *testing.T, s *apptest.Server, name string) int64 {
	t.Helper()
	n, err := s.App.CountRecords(pets.Collection, dbx.HashExp{"name": name})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Creates that wait together are written in one transaction; each gets its
// own answer, and only once the transaction has committed. A create that
// fails, or panics, leaves nothing behind and fails alone.
func TestCreatesThatArriveTogetherShareATransaction(t *testing.T) {
	s, w := startWriter(t)
	release := holdWriter(t, w)

	const n = 12
	type outcome struct {
		pet     pets.Pet
		tx      core.App
		err     error
		visible bool // the pet was committed when Run returned
	}
	outcomes := make([]outcome, n)
	failure := errors.New("refused by its caller")
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o := &outcomes[i]
			o.err = w.Run(context.Background(), func(tx *pets.Tx) (err error) {
				o.tx = tx.App()
				o.pet, err = tx.Insert(pets.NewPet{Name: fmt.Sprintf("batch-%d", i), CategoryID: 1})
				switch {
				case err != nil:
					return err
				case i == 3:
					return failure // after its insert: the insert is rolled back
				case i == 7:
					panic("a bug in one create")
				}
				return nil
			})
			if o.err == nil {
				o.visible = committed(t, s, o.pet.ID)
			}
		})
	}
	waitQueued(t, w, n)
	time.Sleep(10 * time.Millisecond)
	for i := range outcomes {
		if outcomes[i].tx != nil {
			t.Fatalf("create %d ran while the writer was held", i)
		}
	}
	release()
	wg.Wait()

	for i, o := range outcomes {
		switch {
		case o.tx != outcomes[0].tx:
			t.Errorf("create %d ran in another transaction than create 0", i)
		case i == 3:
			if !errors.Is(o.err, failure) {
				t.Errorf("create 3: error %v, want its own", o.err)
			}
		case i == 7:
			if o.err == nil || !strings.Contains(o.err.Error(), "a bug in one create") {
				t.Errorf("create 7: error %v, want its panic", o.err)
			}
		case o.err != nil:
			t.Errorf("create %d: %v", i, o.err)
		case !o.visible:
			t.Errorf("create %d returned before its pet was committed", i)
		}
	}
	for i := range n {
		want := int64(1)
		if i == 3 || i == 7 {
			want = 0
		}
		if got := named(t, s, fmt.Sprintf("batch-%d", i)); got != want {
			t.Errorf("%d pets named batch-%d, want %d", got, i, want)
		}
	}
}

// When SQLite rolls back a whole transaction, each of its creates is
// written again alone: only the one that caused it fails.
func TestARolledBackBatchIsWrittenAgainOneByOne(t *testing.T) {
	s, w := startWriter(t)
	if _, err := s.App.DB().NewQuery(`CREATE TRIGGER roll_back_all BEFORE INSERT ON pets WHEN NEW.name = 'poison'
		BEGIN SELECT RAISE(ROLLBACK, 'injected failure'); END`).Execute(); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, w)
	names := []string{"first", "second", "poison", "fourth", "fifth"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			_, errs[i] = w.Create(context.Background(), pets.NewPet{Name: name, CategoryID: 2})
		})
	}
	waitQueued(t, w, len(names))
	release()
	wg.Wait()
	for i, name := range names {
		want := int64(1)
		if name == "poison" {
			want = 0
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "injected failure") {
				t.Errorf("poison: error %v, want the trigger's", errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("%s: %v", name, errs[i])
		}
		if got := named(t, s, name); got != want {
			t.Errorf("%d pets named %s, want %d", got, name, want)
		}
	}
}

// A batch holds at most MaxBatch creates; the rest wait for the next one.
func TestBatchesAreBounded(t *testing.T) {
	_, w := startWriter(t)
	release := holdWriter(t, w)
	n := pets.MaxBatch + 5
	var mu sync.Mutex
	transactions := map[core.App]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := w.Run(context.Background(), func(tx *pets.Tx) error {
				mu.Lock()
				transactions[tx.App()]++
				mu.Unlock()
				_, err := tx.Insert(pets.NewPet{Name: fmt.Sprint("bounded-", i), CategoryID: 1})
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	waitQueued(t, w, n)
	release()
	wg.Wait()
	sizes := slices.Sorted(func(yield func(int) bool) {
		for _, size := range transactions {
			if !yield(size) {
				return
			}
		}
	})
	if len(sizes) != 2 || sizes[1] != pets.MaxBatch || sizes[0] != 5 {
		t.Fatalf("transactions of %v creates, want [5 %d]", sizes, pets.MaxBatch)
	}
}

// A transaction waits for the creates announced as on their way, and no
// longer than it takes them to arrive.
func TestCreatesOnTheirWayAreWaitedFor(t *testing.T) {
	s := apptest.Start(t, "")
	const window = time.Minute // far longer than the test: only an arrival ends the wait
	w, err := pets.StartWriterGathering(s.App, window)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	release := holdWriter(t, w)
	var mu sync.Mutex
	transactions := map[core.App]int{}
	create := func(name string, done func()) {
		defer done()
		err := w.Run(context.Background(), func(tx *pets.Tx) error {
			mu.Lock()
			transactions[tx.App()]++
			mu.Unlock()
			_, err := tx.Insert(pets.NewPet{Name: name, CategoryID: 1})
			return err
		})
		if err != nil {
			t.Error(err)
		}
	}
	onTheirWay := []func(){w.Expect(), w.Expect(), w.Expect()}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { create(fmt.Sprint("early-", i), onTheirWay[i]) })
	}
	waitQueued(t, w, 2)
	began := time.Now()
	release()
	time.Sleep(10 * time.Millisecond) // the writer takes the two and waits for the third
	wg.Go(func() { create("late", onTheirWay[2]) })
	wg.Wait()
	if waited := time.Since(began); waited > window/2 {
		t.Fatalf("the transaction waited %v, for a create that had arrived", waited)
	}
	if len(transactions) != 1 {
		t.Fatalf("%d transactions for 3 creates on their way together, want 1", len(transactions))
	}

	// Nothing on its way: a create is written at once.
	if _, err := w.Create(context.Background(), pets.NewPet{Name: "alone", CategoryID: 1}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(began); waited > window/2 {
		t.Fatalf("a lone create waited %v", waited)
	}
}

// Stop writes what is queued; a create asked for after Stop fails.
func TestStopWritesWhatIsQueued(t *testing.T) {
	s, w := startWriter(t)
	release := holdWriter(t, w)
	const n = 5
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = w.Create(context.Background(), pets.NewPet{Name: "queued", CategoryID: 1})
		})
	}
	waitQueued(t, w, n)
	stopped := make(chan struct{})
	go func() {
		w.Stop()
		close(stopped)
	}()
	release()
	<-stopped
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("queued create %d: %v", i, err)
		}
	}
	if got := named(t, s, "queued"); got != n {
		t.Errorf("%d queued pets stored, want %d", got, n)
	}
	if _, err := w.Create(context.Background(), pets.NewPet{Name: "late", CategoryID: 1}); !errors.Is(err, pets.ErrStopped) {
		t.Errorf("create after Stop: %v, want ErrStopped", err)
	}
}

// listPets and getPet answer while a write transaction holds SQLite's write
// lock and a create waits for it: reads take neither the writer nor its
// lock, and see only what is committed.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	existing := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})

	// Another connection, as another process would, holds the write lock with
	// a row it has not committed.
	ctx := context.Background()
	conn := s.HoldWriteLock(t)
	if _, err := conn.ExecContext(ctx, `INSERT INTO pets (id, name, categoryId, status, created, updated)
		VALUES ('100000000000001', 'uncommitted', 1, 'sold', '', '')`); err != nil {
		t.Fatal(err)
	}

	created := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", strings.NewReader(`{"name": "Waits", "categoryId": 2}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(created)
			return
		}
		resp.Body.Close()
		created <- resp
	}()

	// Well below busy_timeout (10 s): a read waiting for the lock fails here.
	client := &http.Client{Timeout: 5 * time.Second}
	read := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s while the write lock is held: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return body
	}
	// Each list asks for another page size, so that it is read, not kept;
	// the create reaches the writer meanwhile.
	for limit := 100; limit > 90; limit-- {
		var page []pets.Pet
		if err := json.Unmarshal(read(fmt.Sprint("/v1/pets?limit=", limit)), &page); err != nil {
			t.Fatal(err)
		}
		if len(page) != 1 || page[0] != existing {
			t.Fatalf("list while a write waits: %+v, want only %+v", page, existing)
		}
		time.Sleep(30 * time.Millisecond)
	}
	read(fmt.Sprint("/v1/pets/", existing.ID))
	select {
	case resp := <-created:
		t.Fatalf("the create was answered (%v) while the write lock was held", resp)
	default:
	}

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if resp := <-created; resp == nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("the create after the lock: %v", resp)
	}
}

// OnInserted runs inside the transaction, after each create that inserted
// rows, with its rows: what it writes commits with them, and its error
// fails that create alone, in a batch too. A work that inserts nothing
// (an Idempotency-Key's replay) calls nothing.
func TestOnInsertedWritesWithTheCreate(t *testing.T) {
	s, w := startWriter(t)
	if _, err := s.App.DB().NewQuery("CREATE TABLE inserted_log (pet TEXT)").Execute(); err != nil {
		t.Fatal(err)
	}
	var calls sync.Map
	w.OnInserted(func(tx core.App, rows []pets.Row) error {
		for _, r := range rows {
			calls.Store(r.Name, true)
			if r.Name == "refused" {
				return errors.New("the outbox says no")
			}
			if _, err := tx.NonconcurrentDB().NewQuery("INSERT INTO inserted_log (pet) VALUES ({:id})").
				Bind(dbx.Params{"id": fmt.Sprint(r.ID)}).Execute(); err != nil {
				return err
			}
		}
		return nil
	})
	release := holdWriter(t, w)
	names := []string{"kept", "refused", "also kept"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { _, errs[i] = w.Create(context.Background(), pets.NewPet{Name: name, CategoryID: 1}) })
	}
	waitQueued(t, w, len(names))
	wg.Go(func() {
		errs := w.Run(context.Background(), func(*pets.Tx) error { return nil }) // inserts nothing
		if errs != nil {
			t.Errorf("a work without inserts: %v", errs)
		}
	})
	release()
	wg.Wait()
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors %v, want only the refused one's", errs)
	}
	if named(t, s, "refused") != 0 || named(t, s, "kept") != 1 || named(t, s, "also kept") != 1 {
		t.Error("the refused create's pet was stored, or another's was not")
	}
	var logged int
	if err := s.App.DB().NewQuery("SELECT COUNT(*) FROM inserted_log").Row(&logged); err != nil || logged != 2 {
		t.Errorf("%d rows written by OnInserted (%v), want 2", logged, err)
	}
	n := 0
	calls.Range(func(any, any) bool { n++; return true })
	if n != 3 {
		t.Errorf("OnInserted heard of %d creates, want 3", n)
	}
}

// A caller whose create committed is answered only once OnAcknowledge's
// function returns, after the commit; its error is the caller's, and the
// pet stays stored (committed, not acknowledged). A create that failed is
// not waited for.
func TestCreatesWaitForTheAcknowledgement(t *testing.T) {
	s, w := startWriter(t)
	refuse := errors.New("not shipped")
	var calls atomic.Int64
	acknowledging, pending := make(chan struct{}), make(chan struct{})
	w.OnAcknowledge(func() error {
		calls.Add(1)
		close(acknowledging)
		<-pending
		return refuse
	})
	answered := make(chan error, 1)
	go func() {
		_, err := w.Create(context.Background(), pets.NewPet{Name: "shipped later", CategoryID: 1})
		answered <- err
	}()
	<-acknowledging
	if named(t, s, "shipped later") != 1 {
		t.Error("acknowledge runs before the create has committed")
	}
	select {
	case err := <-answered:
		t.Fatalf("answered (%v) before the acknowledgement", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(pending)
	if err := <-answered; !errors.Is(err, refuse) {
		t.Errorf("the caller's error %v, want the acknowledgement's", err)
	}
	if named(t, s, "shipped later") != 1 {
		t.Error("the pet of a create not acknowledged is not stored")
	}
	// A work that fails commits nothing and waits for nothing.
	failed := errors.New("the work fails")
	if err := w.Run(context.Background(), func(*pets.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("a failed work's error %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("acknowledge called %d times, want once", n)
	}
}

// Pet ids grow in the order of creation, through /v1's writer and through
// the records API alike, and a writer that starts on a table holding an id
// ahead of its clock (written by a node whose clock ran ahead) gives ids
// after it.
func TestPetIDsGrowInCreationOrder(t *testing.T) {
	s := apptest.Start(t, "")
	collection, err := s.App.FindCollectionByNameOrId(pets.Collection)
	if err != nil {
		t.Fatal(err)
	}
	ahead := core.NewRecord(collection)
	ahead.Id = fmt.Sprint(time.Now().Add(30*time.Second).UnixMilli() * 100)
	ahead.Set("name", "from a clock ahead")
	ahead.Set("categoryId", 1)
	if err := s.App.Save(ahead); err != nil {
		t.Fatal(err)
	}
	w, err := pets.StartWriter(s.App)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	insert := func(name string) string {
		var pet pets.Pet
		if err := w.Run(context.Background(), func(tx *pets.Tx) (err error) {
			pet, err = tx.Insert(pets.NewPet{Name: name, CategoryID: 1})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(pet.ID)
	}
	ids := []string{ahead.Id, insert("first"), insert("second")}
	record := core.NewRecord(collection)
	record.Set("name", "through the records API")
	record.Set("categoryId", 1)
	if err := s.App.Save(record); err != nil {
		t.Fatal(err)
	}
	if _, err := s.App.FindRecordById(pets.Collection, record.Id); err != nil {
		t.Fatalf("the record saved as %s: %v", record.Id, err)
	}
	ids = append(ids, record.Id, insert("third"))
	for i := 1; i < len(ids); i++ {
		if len(ids[i]) != 15 || ids[i] <= ids[i-1] {
			t.Errorf("ids in creation order %v: %s does not follow %s", ids, ids[i], ids[i-1])
		}
	}
}

// Ids another process gave ahead of this one's clock (another instance on
// the data directory) cost a create one more attempt, not its failure: the
// insert that finds its id taken moves the clock past every id held.
func TestTakenIDsAreSkipped(t *testing.T) {
	s := apptest.Start(t, "")
	plant := func(from, to int64) {
		t.Helper()
		for id := from; id <= to; id++ {
			if _, err := s.App.DB().NewQuery("INSERT INTO pets (id, name, categoryId, status) VALUES ({:id}, 'Other', 1, 'available')").
				Bind(dbx.Params{"id": fmt.Sprint(id)}).Execute(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A writer that starts after a pet 30 s ahead gives the ids after it,
	// whatever the time: the next ones are known.
	ahead := time.Now().Add(30*time.Second).UnixMilli() * 100
	plant(ahead, ahead)
	w, err := pets.StartWriter(s.App)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	insert := func(name string) int64 {
		t.Helper()
		var pet pets.Pet
		if err := w.Run(context.Background(), func(tx *pets.Tx) (err error) {
			pet, err = tx.Insert(pets.NewPet{Name: name, CategoryID: 1})
			return err
		}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return pet.ID
	}
	last := insert("first")
	plant(last+1, last+20)
	if id := insert("after"); id != last+21 {
		t.Errorf("id %d, want %d, after the other process's %d to %d", id, last+21, last+1, last+20)
	}
}
