package replica

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/database"
)

// leaderEnv, set to "DIR ROOT", makes the test binary a leader that ships
// DIR's database to ROOT's term 1 and commits pets until it is killed,
// printing each pet's id once its commit has returned (TestMain).
const leaderEnv = "PETSTORE_REPLICA_TEST_LEADER"

func TestMain(m *testing.M) {
	if v := os.Getenv(leaderEnv); v != "" {
		dir, rootURL, _ := strings.Cut(v, " ")
		if err := lead(dir, rootURL); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lead is the killed leader's process: PocketBase's pragmas and a
// Replicator (which checkpoints), and one writer acknowledging each commit
// on stdout.
func lead(dir, rootURL string) error {
	path := filepath.Join(dir, database.DataFile)
	db, err := database.Connect(path)
	if err != nil {
		return err
	}
	db.DB().SetMaxOpenConns(1)
	if _, err := db.DB().Exec(`CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root, err := ParseURL(rootURL)
	if err != nil {
		return err
	}
	if _, err := StartReplicating(context.Background(), path, root, "petstore", 1, log); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	// At most 4,000 commits a second, about what the real app's creates
	// reach on this machine: a bare commit loop makes five times more, a
	// write-ahead log that grows faster than a loaded machine copies it.
	start := time.Now()
	for n := 0; ; n++ {
		if ahead := time.Until(start.Add(time.Duration(n) * time.Second / 4000)); ahead > 0 {
			time.Sleep(ahead)
		}
		res, err := db.DB().Exec(`INSERT INTO pets (name, body) VALUES ('Rex', randomblob(200))`)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		fmt.Fprintln(out, id)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// TestKilledLeaderLosesOnlyItsLastSecond: a leader process commits pets
// while it ships; SIGKILL at a random moment; the promoted follower holds
// every pet acknowledged more than a second before the kill.
func TestKilledLeaderLosesOnlyItsLastSecond(t *testing.T) {
	slow(t)
	dir, rootDir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaderEnv+"="+dir+" file://"+rootDir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	acked := map[int64]time.Time{}
	lines := make(chan int64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			id, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				t.Errorf("leader printed %q", sc.Text())
				return
			}
			lines <- id
		}
	}()
	runFor := 2*time.Second + time.Duration(time.Now().UnixNano()%int64(time.Second))
	deadline := time.After(runFor)
	var killedAt time.Time
	for killedAt.IsZero() {
		select {
		case id, ok := <-lines:
			if !ok {
				t.Fatalf("the leader stopped: %v", cmd.Wait())
			}
			acked[id] = time.Now()
		case <-deadline:
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killedAt = time.Now()
		}
	}
	for id := range lines { // printed before the kill
		acked[id] = killedAt
	}
	_ = cmd.Wait()

	followerDir := t.TempDir()
	f := startFollowing(t, fileRoot(t, rootDir), 1, followerDir)
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := map[int64]bool{}
	for _, row := range rows(t, filepath.Join(followerDir, database.DataFile)) {
		id, _, _ := strings.Cut(row, " ")
		n, _ := strconv.ParseInt(id, 10, 64)
		got[n] = true
	}
	var lost int
	var oldestLost time.Duration
	for id, at := range acked {
		if got[id] {
			continue
		}
		lost++
		oldestLost = max(oldestLost, killedAt.Sub(at))
	}
	t.Logf("%d commits acknowledged in %v, %d in the promoted copy; %d lost, the oldest acknowledged %v before the kill",
		len(acked), runFor, len(got), lost, oldestLost)
	if oldestLost > time.Second {
		t.Errorf("a commit acknowledged %v before the kill is lost", oldestLost)
	}
	if len(got) == 0 {
		t.Error("nothing was shipped")
	}
}
