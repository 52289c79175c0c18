package realserver_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/database"
	"petstore/testkit/realserver"
)

// created is a create a writer saw acknowledged: the pet's id, its 201's
// body, and when the answer arrived.
type created struct {
	id   string
	body string
	at   time.Time
}

// TestBackupCreateWhileServingThenRestore: `petstore backup create` runs
// while 4 clients create pets; `backup restore` refuses the directory while
// serve has it open, and leaves it as it was; once the server is stopped,
// the restore brings back every pet acknowledged before the backup began,
// byte for byte, and none acknowledged after it ended; the next start
// writes backup.restored, by the CLI.
func TestBackupCreateWhileServingThenRestore(t *testing.T) {
	dir, p := serveBinary(t)
	const writers = 4
	keys := make([]string, writers)
	for i := range keys {
		keys[i], _ = createKey(t, dir, "--plan", "business")
	}

	var (
		mu    sync.Mutex
		acks  []created
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		fails []string
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 900; n++ { // under the plan's 1,000 a minute
				select {
				case <-stop:
					return
				default:
				}
				status, body, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", keys[w], fmt.Appendf(nil, `{"name":"pet %d-%d","categoryId":%d}`, w, n, n%7+1))
				at := time.Now()
				mu.Lock()
				if err != nil || status != http.StatusCreated {
					fails = append(fails, fmt.Sprintf("%d %v %s", status, err, body))
				} else {
					id, _, _ := strings.Cut(strings.TrimPrefix(string(body), `{"id":`), ",")
					acks = append(acks, created{id: id, body: string(body), at: at})
				}
				mu.Unlock()
			}
		}()
	}
	acked := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	for acked() < 100 {
		time.Sleep(10 * time.Millisecond)
	}

	began := time.Now()
	stdout, stderr, status := petstore(t, dir, "backup", "create", "--name", "under_load.zip")
	ended := time.Now()
	if status != 0 || !strings.Contains(stdout, "Created the backup under_load.zip") {
		t.Fatalf("backup create: %d\n%s%s", status, stdout, stderr)
	}
	for n := acked(); acked() < n+100 && time.Since(ended) < 5*time.Second; {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("%d creates failed while the backup was made, the first: %s", len(fails), fails[0])
	}
	t.Logf("backup create took %v while 4 clients created pets; %d creates in all", ended.Sub(began).Round(time.Millisecond), len(acks))

	stdout, _, _ = petstore(t, dir, "backup", "list")
	if !strings.Contains(stdout, "under_load.zip") {
		t.Errorf("backup list does not show the backup:\n%s", stdout)
	}

	// Served: refused, and nothing moved.
	_, stderr, status = petstore(t, dir, "backup", "restore", "under_load.zip")
	if status != 1 || !strings.Contains(stderr, dir+" is in use") || !strings.Contains(stderr, "stopped directory") {
		t.Fatalf("restore into the served directory: status %d, stderr %q; want 1 and the refusal", status, stderr)
	}
	if n := petCount(t, p, keys[0]); n != len(acks) {
		t.Fatalf("after the refused restore the server lists %d pets, want %d", n, len(acks))
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status = petstore(t, dir, "backup", "restore", "under_load.zip")
	if status != 0 || !strings.Contains(stdout, "Restored") {
		t.Fatalf("restore into the stopped directory: %d\n%s%s", status, stdout, stderr)
	}

	restored := petIDs(t, dir)
	before := 0
	for _, a := range acks {
		switch {
		case !a.at.After(began):
			before++
			if !restored[a.id] {
				t.Errorf("pet %s, acknowledged before the backup began, is not restored", a.id)
			}
		case a.at.After(ended) && restored[a.id]:
			// Acknowledged after the command ended: its snapshot was
			// taken before.
			t.Errorf("pet %s, acknowledged after the backup ended, is in it", a.id)
		}
	}
	if len(restored) < before || len(restored) > len(acks) {
		t.Errorf("the restored directory holds %d pets; %d were acknowledged before the backup, %d in all", len(restored), before, len(acks))
	}
	t.Logf("%d pets restored: %d acknowledged before the backup began, %d in all", len(restored), before, len(acks))

	p, err := realserver.Start(bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for i, a := range acks {
		if !restored[a.id] || i%10 != 0 {
			continue
		}
		status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets/"+a.id, keys[0], nil)
		if err != nil || status != http.StatusOK || string(body) != a.body {
			t.Fatalf("GET the restored pet %s: %d %v %s, want its 201's body %s", a.id, status, err, body, a.body)
		}
	}
	waitUntil(t, 10*time.Second, "backup.restored in the log", func() bool { return strings.Contains(p.Output(), `msg="Audit: backup.restored"`) })
	if line := lineWith(p.Output(), "Audit: backup.restored"); !strings.Contains(line, "actor=cli") || !strings.Contains(line, `\"backup\":\"under_load.zip\"`) {
		t.Errorf("the restore's audit line: %s", line)
	}
	if _, err := os.Stat(filepath.Join(dir, core.LocalTempDirName)); err == nil {
		entries, _ := os.ReadDir(filepath.Join(dir, core.LocalTempDirName))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "old_pb_data_") {
				t.Errorf("the replaced data is still in %s after the start", e.Name())
			}
		}
	}
}

// petIDs reads the ids of the pets in dir's data.db, which no process has
// open.
func petIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	db, err := database.Connect(filepath.Join(dir, database.DataFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	if err := db.NewQuery("SELECT id FROM pets").Column(&ids); err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.NewQuery("PRAGMA integrity_check").Row(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the restored data.db: %q %v", check, err)
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// petCount is how many pets p lists, following listPets' pages.
func petCount(t *testing.T, p *realserver.Process, key string) int {
	t.Helper()
	n, path := 0, "/v1/pets?limit=100"
	for path != "" {
		resp, body, err := p.Exchange(context.Background(), http.MethodGet, path, key, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %v %s", path, err, body)
		}
		n += strings.Count(string(body), `"id":`)
		path = ""
		if link := resp.Header.Get("Link"); link != "" {
			path = strings.TrimPrefix(strings.SplitN(link, ">", 2)[0], "<")
		}
	}
	return n
}

// lineWith is the first line of out that holds s.
func lineWith(out, s string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
