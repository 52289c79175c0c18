package replica_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/database"
	"petstore/internal/replica"
	"petstore/testkit/apptest"
)

// created is a 201 from createPet: the pet's id and the body's bytes.
type created struct {
	id   int64
	body []byte
}

// createPets has 8 clients create pets on s until stop closes, and returns
// every 201.
func createPets(t *testing.T, s *apptest.Server, key string, stop <-chan struct{}) []created {
	var mu sync.Mutex
	var out []created
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf(`{"name":"pet %d-%d","categoryId":%d,"status":"available"}`, c, n, 1+n%5)
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/pets", bytes.NewBufferString(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("createPet: %v", err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusCreated {
					t.Errorf("createPet: %d %s (%v)", resp.StatusCode, b, err)
					return
				}
				var pet struct{ ID int64 }
				if err := json.Unmarshal(b, &pet); err != nil {
					t.Errorf("createPet: %v", err)
					return
				}
				mu.Lock()
				out = append(out, created{pet.ID, b})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// TestTheRealAppFailsOverToAFollower: petstore serves, with PocketBase's
// connections, its Checkpointer and Litestream in one process, while 8
// clients create pets; a follower of the term keeps up (its lag under load
// is logged); the leader stops; the promoted copy serves every acknowledged
// pet, byte for byte, with the same key.
func TestTheRealAppFailsOverToAFollower(t *testing.T) {
	apptest.Slow(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	root, err := replica.ParseURL("file://" + t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leader := apptest.Start(t, "")
	key := leader.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	r, err := replica.StartReplicating(t.Context(), filepath.Join(leader.Dir, database.DataFile), root, "petstore", 1, log)
	if err != nil {
		t.Fatal(err)
	}
	followerDir := t.TempDir()
	f, err := replica.StartFollowing(t.Context(), root, "petstore", 1, filepath.Join(followerDir, database.DataFile), log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	stop := make(chan struct{})
	var worst replica.Lag
	var sampled sync.WaitGroup
	sampled.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			l := f.Lag()
			if l.Err != nil {
				t.Errorf("lag: %v", l.Err)
			}
			if l.Seconds > worst.Seconds {
				worst.Seconds = l.Seconds
			}
			worst.Transactions = max(worst.Transactions, l.Transactions)
		}
	})
	time.AfterFunc(3*time.Second, func() { close(stop) })
	start := time.Now()
	pets := createPets(t, leader, key, stop)
	rate := float64(len(pets)) / time.Since(start).Seconds()
	sampled.Wait()
	if len(pets) == 0 {
		t.Fatal("no pet created")
	}
	t.Logf("%d creates (%.0f/s); the follower's lag under them at most %.2f s and %d transactions", len(pets), rate, worst.Seconds, worst.Transactions)
	if worst.Seconds > 3 {
		t.Errorf("the follower lagged %.2f s behind", worst.Seconds)
	}

	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	leader.Stop(t) // PocketBase closes its connections, then Litestream stops
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}

	promoted := apptest.Start(t, followerDir)
	for _, p := range pets {
		got := promoted.Do(t, http.MethodGet, fmt.Sprintf("/v1/pets/%d", p.id), key, nil)
		if got.StatusCode != http.StatusOK || !bytes.Equal(got.Body, p.body) {
			t.Fatalf("pet %d on the promoted copy: %d %s, want %s", p.id, got.StatusCode, got.Body, p.body)
		}
	}
}
