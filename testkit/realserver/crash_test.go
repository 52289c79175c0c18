package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/pets"
	"petstore/testkit/realserver"
)

// TestCrashKeepsAcknowledgedWrites kills the server with SIGKILL at a random
// moment while 32 clients create pets, a few times over on the same --dir.
// So many creates at once are written in batches, one transaction each
// (package pets), and the kill lands among them. A third of the creates
// carry an Idempotency-Key. After each restart every pet whose 201 reached
// its client is there with the same fields; every key sent before the kill,
// sent again with its body, gives the acknowledged pet back, or for an
// unacknowledged one the pet committed without its answer, or a new pet; a
// key revoked just before the kill is still revoked; and every stored row is
// one a client sent, whole, once.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "enterprise", "--per-minute", "100000000", "--per-day", "1000000000")

	const clients = 32
	sent := map[string]pets.Pet{}   // by name (unique): what a client asked for
	acked := map[int64]pets.Pet{}   // by id: what a 201 answered
	keyed := map[string]keyedSend{} // by Idempotency-Key
	var mu sync.Mutex

	for round := range 3 {
		doomed, doomedID := createKey(t, dir, "--plan", "free")
		p := start(t, dir)
		if status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets?limit=1", doomed, nil); status != http.StatusOK {
			t.Fatalf("round %d: new key refused: %d %v %s", round, status, err, body)
		}

		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range clients {
			wrng := rand.New(rand.NewPCG(seed, uint64(round*clients+w+1)))
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					want := pets.Pet{
						Name:       fmt.Sprintf("r%d-c%d-%d", round, w, i),
						CategoryID: 1 + wrng.Int64N(1<<53-1),
						Status:     []string{"", "available", "pending", "sold"}[wrng.IntN(4)],
					}
					body, _ := json.Marshal(map[string]any{"name": want.Name, "categoryId": want.CategoryID, "status": want.Status})
					if want.Status == "" {
						body, _ = json.Marshal(map[string]any{"name": want.Name, "categoryId": want.CategoryID})
						want.Status = "available" // the documented default
					}
					var idemKey string
					if wrng.IntN(3) == 0 {
						idemKey = "crash-" + want.Name
					}
					mu.Lock()
					sent[want.Name] = want
					if idemKey != "" {
						keyed[idemKey] = keyedSend{body: body}
					}
					mu.Unlock()
					status, resp, err := createWithKey(p, key, idemKey, body)
					if err != nil {
						return // the server is gone
					}
					var got pets.Pet
					if status != http.StatusCreated || json.Unmarshal(resp, &got) != nil {
						t.Errorf("create %s: %d %s", body, status, resp)
						return
					}
					want.ID = got.ID
					if got != want {
						t.Errorf("created %+v, want %+v", got, want)
					}
					mu.Lock()
					acked[got.ID] = got
					if idemKey != "" {
						keyed[idemKey] = keyedSend{body: body, acked: got}
					}
					mu.Unlock()
				}
			})
		}

		time.Sleep(time.Duration(100+rng.IntN(1500)) * time.Millisecond)
		if _, _, err := realserver.Keys(bin, dir, "revoke", doomedID); err != nil {
			t.Fatal(err)
		}
		p.Kill()
		close(stop)
		wg.Wait()
		mu.Lock()
		t.Logf("round %d: killed with %d pets acknowledged, %d sent", round, len(acked), len(sent))
		mu.Unlock()

		p = start(t, dir)
		for id, want := range acked {
			if got := getPet(t, p, key, id); got != want {
				t.Fatalf("after restart pet %d is %+v, want %+v", id, got, want)
			}
		}
		if status, body, _ := p.Do(context.Background(), http.MethodGet, "/v1/pets", doomed, nil); status != http.StatusUnauthorized {
			t.Fatalf("round %d: key revoked before the kill answers %d %s after restart", round, status, body)
		}
		// Retried with its key, every create ends with one pet: the
		// acknowledged one, or the one committed before the kill, or a new one.
		for idemKey, ks := range keyed {
			status, resp, err := createWithKey(p, key, idemKey, ks.body)
			var got pets.Pet
			if err != nil || status != http.StatusCreated || json.Unmarshal(resp, &got) != nil {
				t.Fatalf("retry of %s: %d %v %s", idemKey, status, err, resp)
			}
			if ks.acked.ID != 0 && got != ks.acked {
				t.Fatalf("retry of %s after restart gave %+v, the 201 before the kill %+v", idemKey, got, ks.acked)
			}
			keyed[idemKey] = keyedSend{body: ks.body, acked: got}
		}
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		checkStoredPets(t, dir, sent, len(acked))
	}
}

// keyedSend is a create sent with an Idempotency-Key: its body, and the pet
// a 201 answered, if one did.
type keyedSend struct {
	body  []byte
	acked pets.Pet
}

// createWithKey posts body to createPet with key, and with idemKey as its
// Idempotency-Key when it is not empty.
func createWithKey(p *realserver.Process, key, idemKey string, body []byte) (int, []byte, error) {
	var header []string
	if idemKey != "" {
		header = []string{"Idempotency-Key", idemKey}
	}
	resp, data, err := p.Exchange(context.Background(), http.MethodPost, "/v1/pets", key, body, header...)
	if resp == nil {
		return 0, nil, err
	}
	return resp.StatusCode, data, err
}

var petID = regexp.MustCompile(`^[1-9][0-9]{14}$`)

// checkStoredPets reads the pets table itself: the database is intact, and
// every row is whole and exactly one a client sent, once.
func checkStoredPets(t *testing.T, dir string, sent map[string]pets.Pet, atLeast int) {
	t.Helper()
	db, err := core.DefaultDBConnect(filepath.Join(dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var check string
	if err := db.NewQuery("PRAGMA integrity_check").Row(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	var rows []struct {
		ID         string  `db:"id"`
		Name       string  `db:"name"`
		CategoryID float64 `db:"categoryId"`
		Status     string  `db:"status"`
		Created    string  `db:"created"`
		Updated    string  `db:"updated"`
	}
	if err := db.Select("id", "name", "categoryId", "status", "created", "updated").From("pets").All(&rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < atLeast {
		t.Fatalf("%d pets stored, %d were acknowledged", len(rows), atLeast)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Name] {
			t.Fatalf("two stored pets are named %s: one create stored twice", r.Name)
		}
		seen[r.Name] = true
		want, ok := sent[r.Name]
		if !ok || !petID.MatchString(r.ID) || r.CategoryID != float64(want.CategoryID) || r.Status != want.Status ||
			r.Created == "" || r.Updated == "" {
			t.Fatalf("stored row %+v is not what a client sent (%+v)", r, want)
		}
	}
}
