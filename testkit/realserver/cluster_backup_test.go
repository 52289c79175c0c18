package realserver_test

import (
	"archive/zip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"petstore/testkit/realserver"
)

// `petstore backup create` on a follower's --dir backs up the cluster's
// data from a copy of the follower's copy, taken while the follower applies
// what the leader ships (a writer creates pets throughout): every pet the
// leader acknowledged (with --cluster-sync: once shipped) is in the backup
// once the follower has applied it, the backup restores into a single
// server's directory, `backup list` lists the follower's backups and
// `--keep` prunes them. The follower goes on following, its copy
// untouched by the backup.
func TestClusterBackupOnAFollower(t *testing.T) {
	c := startCluster(t, 2, "--cluster-sync")
	key := startLeaderAndFollowers(t, c)
	leader, follower := c.nodes[0], c.nodes[1]

	var ids []int64
	for i := range 20 {
		status, body := send(t, http.MethodPost, leader.url()+"/v1/pets", key, fmt.Sprintf(`{"name":"before %d","categoryId":1}`, i))
		var pet struct{ ID int64 }
		if err := json.Unmarshal(body, &pet); status != http.StatusCreated || err != nil {
			t.Fatalf("create: %d %s", status, body)
		}
		ids = append(ids, pet.ID)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			send(t, http.MethodPost, leader.url()+"/v1/pets", key, fmt.Sprintf(`{"name":"during %d","categoryId":1}`, i))
		}
	})
	defer func() { close(stop); wg.Wait() }()

	// The follower applies what was shipped within about a second; each
	// backup shows how far it had got.
	var made []string
	var lastOut string
	held := func() bool {
		name := fmt.Sprintf("follower_%d.zip", len(made))
		stdout, stderr, err := realserver.Run(bin, follower.dir, "backup", "create", "--name", name)
		if err != nil {
			t.Fatalf("backup create on the follower's --dir: %v\n%s", err, stderr)
		}
		made, lastOut = append(made, name), stdout
		got := petsIn(t, filepath.Join(follower.dir, "backups", name))
		for _, id := range ids {
			if !got[id] {
				return false
			}
		}
		return true
	}
	waitUntil(t, 30*time.Second, "a follower's backup holds every pet acknowledged before it", held)
	if !strings.Contains(lastOut, "from this cluster follower's copy of the data") || !strings.Contains(lastOut, "term ") {
		t.Errorf("backup create's output on the follower: %q", lastOut)
	}
	if !follower.follows() {
		t.Errorf("the follower no longer follows after the backups; its output:\n%s", follower.output.String())
	}

	listed, stderr, err := realserver.Run(bin, follower.dir, "backup", "list")
	if err != nil {
		t.Fatalf("backup list on the follower's --dir: %v\n%s", err, stderr)
	}
	for _, name := range made {
		if !strings.Contains(listed, name) {
			t.Errorf("backup list on the follower lacks %s:\n%s", name, listed)
		}
	}

	// --keep prunes the follower's own backups named by petstore: an older
	// one goes, those named otherwise stay.
	const older = "petstore_backup_20000101000000.zip"
	if _, stderr, err := realserver.Run(bin, follower.dir, "backup", "create", "--name", older); err != nil {
		t.Fatalf("backup create --name %s on the follower's --dir: %v\n%s", older, err, stderr)
	}
	pruned, stderr, err := realserver.Run(bin, follower.dir, "backup", "create", "--keep", "1")
	if err != nil {
		t.Fatalf("backup create --keep 1 on the follower's --dir: %v\n%s", err, stderr)
	}
	newest := strings.Fields(strings.TrimPrefix(pruned, "Created the backup "))[0]
	if !strings.Contains(pruned, "Deleted the backup "+older+" (--keep 1)") {
		t.Errorf("backup create --keep 1 on the follower: %q, want %s deleted", pruned, older)
	}
	zips, _ := filepath.Glob(filepath.Join(follower.dir, "backups", "*.zip"))
	if len(zips) != len(made)+1 {
		t.Errorf("backups after --keep 1: %q, want the %d named by --name and the newest", zips, len(made))
	}

	// The backup restores into a single server's directory.
	single := t.TempDir()
	if _, stderr, err := realserver.Run(bin, single, "backup", "restore", filepath.Join(follower.dir, "backups", newest)); err != nil {
		t.Fatalf("restore the follower's backup into a new directory: %v\n%s", err, stderr)
	}
	restored := petsIn(t, filepath.Join(single, "data.db"))
	for _, id := range ids {
		if !restored[id] {
			t.Errorf("pet %d, acknowledged before the backups, is not in the restored directory", id)
		}
	}
}

// petsIn returns the ids of the pets in a backup zip's data.db, or in a
// database file.
func petsIn(t *testing.T, path string) map[int64]bool {
	t.Helper()
	db := path
	if strings.HasSuffix(path, ".zip") {
		db = filepath.Join(t.TempDir(), "data.db")
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		src, err := zr.Open("data.db")
		if err != nil {
			t.Fatalf("%s holds no data.db: %v", path, err)
		}
		defer src.Close()
		dst, err := os.Create(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		dst.Close()
	}
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query("SELECT id FROM pets")
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	return ids
}
