package realserver_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	_ "modernc.org/sqlite"

	"petstore/internal/database"
	"petstore/internal/datadir"
	_ "petstore/migrations"
	"petstore/testkit/realserver"
)

// TestDataDirectoryIsTheOwnersAlone starts the binary with umask 022 (files
// 0644 by default) on a data directory made 0755 with a 0644 file in it, as
// an older petstore left them: while it serves, with a key, a pet, a
// backup and an uploaded file's directory made, the directory and every
// directory under it are 0700, every file 0600: data.db, auxiliary.db,
// their -wal and -shm, the backup.
func TestDataDirectoryIsTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := filepath.Join(t.TempDir(), "pb_data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "left-by-an-older-version"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, status := petstore(t, dir, "superuser", "upsert", "staff@example.com", "a long enough password"); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	p := start(t, dir)
	key, _ := createKey(t, dir, "--plan", "business")
	ctx := context.Background()
	if status, body, err := p.Do(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`)); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v %s", status, err, body)
	}
	token := superuserToken(t, p)
	if resp, body, err := p.Exchange(ctx, http.MethodPost, "/api/backups", "", []byte(`{"name":"b.zip"}`), "Authorization", token); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("backup: %v %v %s", resp, err, body)
	}

	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		rel, _ := filepath.Rel(dir, path)
		seen[rel] = true
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s is %v, want %v", rel, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".", "data.db", "data.db-wal", "data.db-shm", "auxiliary.db", "auxiliary.db-wal", "auxiliary.db-shm",
		"backups", "backups/b.zip", "storage", "left-by-an-older-version"} {
		if !seen[name] {
			t.Errorf("%s not found in the data directory: %v", name, seen)
		}
	}
}

// superuserToken signs in the superuser that serveBinary and the tests here
// make.
func superuserToken(t *testing.T, p *realserver.Process) string {
	t.Helper()
	status, body, err := p.Do(context.Background(), http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"a long enough password"}`))
	if err != nil || status != http.StatusOK {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}
	_, rest, _ := strings.Cut(string(body), `"token":"`)
	token, _, _ := strings.Cut(rest, `"`)
	return token
}

// startAtOnce starts n servers on dir at the same moment and fails the test
// unless every one of them serves.
func startAtOnce(t *testing.T, dir string, n int) []*realserver.Process {
	t.Helper()
	ps := make([]*realserver.Process, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ps[i], errs[i] = realserver.Start(bin, dir) })
	}
	wg.Wait()
	for i, p := range ps {
		if p != nil {
			t.Cleanup(p.Kill)
		}
		if errs[i] != nil {
			t.Fatalf("start %d of %d: %v", i+1, n, errs[i])
		}
	}
	return ps
}

// TestSimultaneousFirstStarts starts two, then three servers at once on
// one fresh data directory: the start lock makes each wait for the one
// applying the migrations, and all of them serve, none exiting on "database
// is locked".
func TestSimultaneousFirstStarts(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			ps := startAtOnce(t, dir, n)
			key := createKeyBeside(t, dir)
			created := 0
			for i, p := range ps {
				status, body, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`))
				if err != nil || status != http.StatusCreated {
					t.Fatalf("server %d: create: %d %v %s", i+1, status, err, body)
				}
				created += strings.Count(p.Output(), `msg="Created the database"`)
			}
			if created != 1 {
				t.Errorf("%d servers say they created the database, want 1", created)
				for i, p := range ps {
					t.Logf("server %d:\n%s", i+1, p.Output())
				}
			}
		})
	}
}

// createKeyBeside creates a key on dir while servers run on it. Each
// server, once serving on a directory without a superuser, saves PocketBase's
// installer superuser in a deferred transaction; a write from another
// process that began reading before that commit fails with SQLite's
// BUSY_SNAPSHOT ("database is locked (517)"), which busy_timeout does not
// wait out. That is PocketBase's way with writes from several processes,
// not the start's, and the CLI reports it: try again, as an operator would.
func createKeyBeside(t *testing.T, dir string) string {
	t.Helper()
	for try := 1; ; try++ {
		key, _, err := realserver.CreateKey(bin, dir, "--plan", "business")
		if err == nil {
			return key
		}
		if try == 5 || !strings.Contains(err.Error(), "database is locked (517)") {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUpgradeWithTwoInstances brings data at an older migration state (the
// newest migration reverted) to two new servers started at once: one copies
// the database and applies the migration, logging it, while the other waits;
// both serve. The copy has the data of before the upgrade.
func TestUpgradeWithTwoInstances(t *testing.T) {
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "business")
	newest := revertNewestMigration(t, dir)

	ps := startAtOnce(t, dir, 2)
	output := ps[0].Output() + ps[1].Output()
	if n := strings.Count(output, `msg="Migration applied" migration=`+newest); n != 1 {
		t.Errorf("the servers logged applying %s %d times, want once:\n%s", newest, n, output)
	}
	if n := strings.Count(output, `msg="Copied the database before applying migrations"`); n != 1 {
		t.Errorf("the servers copied the database %d times, want once:\n%s", n, output)
	}
	for i, p := range ps {
		if status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets", key, nil); err != nil || status != http.StatusOK {
			t.Fatalf("server %d: list: %d %v %s", i+1, status, err, body)
		}
	}
	backups, err := filepath.Glob(filepath.Join(dir, "backups", "pre-upgrade-*.db"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("backups %v %v, want one pre-upgrade copy", backups, err)
	}
	if applied := migrationApplied(t, backups[0], newest); applied {
		t.Errorf("the copy %s has %s: it was made after the migration", backups[0], newest)
	}
	if applied := migrationApplied(t, filepath.Join(dir, database.DataFile), newest); !applied {
		t.Errorf("data.db does not record %s", newest)
	}
}

// revertNewestMigration runs the newest of petstore's migrations down on
// dir, as if the data came from the version before it, and returns its
// name.
func revertNewestMigration(t *testing.T, dir string) string {
	t.Helper()
	app := core.NewBaseApp(core.BaseAppConfig{DataDir: dir, DBConnect: database.Connect})
	if err := app.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	defer app.ResetBootstrapState()
	reverted, err := core.NewMigrationsRunner(app, core.AppMigrations).Down(1)
	if err != nil || len(reverted) != 1 {
		t.Fatalf("revert: %v %v", reverted, err)
	}
	items := core.AppMigrations.Items()
	if newest := items[len(items)-1].File; reverted[0] != newest {
		t.Fatalf("reverted %s, not the newest migration %s", reverted[0], newest)
	}
	return reverted[0]
}

// migrationApplied tells whether the database at path records migration.
func migrationApplied(t *testing.T, path, migration string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM _migrations WHERE file = ?", migration).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// execSQL runs statements on the database at path.
func execSQL(t *testing.T, path string, statements ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range statements {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestDataFromANewerVersionIsRefused: data that records a migration this
// binary does not know (a newer version's) stops serve and the CLI with
// exit status 1 and a message naming the migration and the fix, before
// anything is written; `version` still answers.
func TestDataFromANewerVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	createKey(t, dir, "--plan", "business")
	const future = "1999999999_from_a_newer_petstore.go"
	execSQL(t, filepath.Join(dir, database.DataFile),
		fmt.Sprintf("INSERT INTO _migrations (file, applied) VALUES ('%s', 1999999999000000)", future))
	before, err := os.ReadFile(filepath.Join(dir, database.DataFile))
	if err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"serve", "--http", "127.0.0.1:0"}, {"keys", "list"}} {
		stderr, status := refused(t, dir, args...)
		if status != 1 {
			t.Errorf("%v: exit status %d, want 1: %s", args, status, stderr)
		}
		for _, want := range []string{future, "comes from a newer petstore", "run that version", "pre-upgrade", "Upgrades and rollback"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: the message does not say %q:\n%s", args, want, stderr)
			}
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, database.DataFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("data.db changed")
	}
	if stdout, stderr, status := petstore(t, dir, "version"); status != 0 || !strings.HasPrefix(stdout, "petstore ") {
		t.Errorf("version: %d %q %s", status, stdout, stderr)
	}
}

// TestDamagedDatabaseIsRefused overwrites pages in the middle of data.db
// (after a clean stop, so that there is no WAL): serve checks the database
// with PRAGMA quick_check, exits 1 and says how to restore it.
func TestDamagedDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir)
	key, _ := createKey(t, dir, "--plan", "business")
	for i := range 300 {
		body := fmt.Sprintf(`{"name":"pet %d with a name long enough to fill pages","categoryId":1}`, i)
		if status, out, err := p.Do(context.Background(), http.MethodPost, "/v1/pets", key, []byte(body)); err != nil || status != http.StatusCreated {
			t.Fatalf("create: %d %v %s", status, err, out)
		}
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if out, err := os.ReadFile(filepath.Join(dir, database.DataFile+"-wal")); err == nil && len(out) > 0 {
		t.Fatalf("a WAL of %d bytes is left after a clean stop", len(out))
	}
	damage(t, filepath.Join(dir, database.DataFile))

	stderr, status := refused(t, dir, "serve", "--http", "127.0.0.1:0")
	if status != 1 {
		t.Fatalf("serve on a damaged database: exit status %d, want 1:\n%s", status, stderr)
	}
	for _, want := range []string{"is damaged", "quick_check", "litestream restore", "backups", "--quick-check 0"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, stderr)
		}
	}
}

// damage overwrites four pages in the middle of the database at path.
func damage(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	garbage := make([]byte, 4*page)
	for i := range garbage {
		garbage[i] = byte(i*7 + 13)
	}
	if _, err := f.WriteAt(garbage, info.Size()/2/page*page); err != nil {
		t.Fatal(err)
	}
}

// TestFlagsHaveEnvironmentVariables: PETSTORE_DIR (read when the app is
// made), PETSTORE_LOG_FORMAT (petstore's) and PETSTORE_HTTP (PocketBase's
// serve flag), read once the command line is parsed, configure a server; a
// flag beats its variable; a variable's bad value stops the binary naming it.
func TestFlagsHaveEnvironmentVariables(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PETSTORE_DIR", dir)
	t.Setenv("PETSTORE_LOG_FORMAT", "json")
	t.Setenv("PETSTORE_HTTP", "127.0.0.1:1") // beaten by --http
	p := start(t, filepath.Join(t.TempDir(), "beaten-by---dir"), "--log-format", "text")
	if !strings.Contains(p.Output(), `level=INFO msg="petstore started"`) {
		t.Errorf("--log-format text did not beat PETSTORE_LOG_FORMAT=json:\n%s", p.Output())
	}
	p.Kill()

	cmd := exec.Command(bin, "serve")
	ln := freeAddr(t)
	cmd.Env = append(os.Environ(), "PETSTORE_HTTP="+ln)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + ln + "/api/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no server at PETSTORE_HTTP %s: %v", ln, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, database.DataFile)); err != nil {
		t.Errorf("nothing in PETSTORE_DIR: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !strings.Contains(out.String(), `"msg":"Opened the data directory"`) || !strings.Contains(out.String(), `"dataDir":"`+dir+`"`) {
		t.Errorf("PETSTORE_LOG_FORMAT=json and PETSTORE_DIR not in the log:\n%s", out)
	}

	t.Setenv("PETSTORE_SHUTDOWN_TIMEOUT", "soon")
	_, stderr, status := petstore(t, t.TempDir(), "keys", "list")
	if status != 1 || !strings.Contains(stderr, `invalid PETSTORE_SHUTDOWN_TIMEOUT "soon"`) {
		t.Errorf("a bad PETSTORE_SHUTDOWN_TIMEOUT: exit status %d, want 1 naming it: %s", status, stderr)
	}
}

// refused runs the binary on dir, which should refuse to start, and
// returns its stderr and exit status; after a minute it kills it.
func refused(t *testing.T, dir string, args ...string) (stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--dir", dir)...)
	var out strings.Builder
	cmd.Stderr = &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v did not exit within a minute:\n%s", args, out.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// TestStartLockTimeout holds the start lock in the test, as a stuck start
// would: serve says what it waits for, and after --lock-timeout exits 1
// naming the lock, its holder and the flag.
func TestStartLockTimeout(t *testing.T) {
	dir := t.TempDir()
	lock, err := datadir.Acquire(dir, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	started := time.Now()
	stderr, status := refused(t, dir, "serve", "--http", "127.0.0.1:0", "--lock-timeout", "1s")
	if status != 1 || time.Since(started) < time.Second {
		t.Fatalf("serve: exit status %d after %v, want 1 after --lock-timeout 1s:\n%s", status, time.Since(started), stderr)
	}
	lockPath := filepath.Join(dir, datadir.LockFile)
	for _, want := range []string{
		`msg="Waiting for another petstore process to open the data directory and apply migrations" lock=` + lockPath,
		fmt.Sprintf("gave up after 1s waiting for the start lock %s: another petstore process (pid %d) holds it", lockPath, os.Getpid()),
		"--lock-timeout (PETSTORE_LOCK_TIMEOUT)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
}

// TestCommandLineErrorsLeaveTheDataDirectoryAlone: a command line petstore
// cannot run (an unknown flag or command, a value a flag refuses, from the
// command line or its variable) exits 1 with an error naming it, before
// the data directory is created or opened; with the message's whole text
// for a few, where TestEveryFlagRefusesABadValue (flags_test.go) walks
// every flag.
func TestCommandLineErrorsLeaveTheDataDirectoryAlone(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string // NAME=VALUE
		want string
	}{
		{args: []string{"serve", "--bogus"}, want: "Error: unknown flag: --bogus"},
		{args: []string{"--bogus"}, want: "Error: unknown flag: --bogus"},
		{args: []string{"bogus"}, want: `Error: unknown command "bogus"`},
		{args: []string{"serve", "--ratelimit-redis", "not-a-url"}, want: `Error: invalid --ratelimit-redis (or PETSTORE_RATELIMIT_REDIS): scheme ""`},
		{args: []string{"serve", "--public-url", "shop.example.org"}, want: `Error: invalid --public-url (or PETSTORE_PUBLIC_URL) "shop.example.org"`},
		{args: []string{"serve", "--idle-timeout", "5"}, want: `invalid argument "5" for "--idle-timeout" flag`},
		{args: []string{"serve", "--log-format", "xml"}, want: `Error: invalid --log-format (or PETSTORE_LOG_FORMAT) "xml": text or json`},
		{args: []string{"serve"}, env: "PETSTORE_QUICK_CHECK=soon", want: `Error: invalid PETSTORE_QUICK_CHECK "soon" (for --quick-check)`},
		{args: []string{"keys", "list"}, env: "PETSTORE_RATELIMIT_REDIS=http://:hunter2@127.0.0.1:6379", want: `Error: invalid --ratelimit-redis (or PETSTORE_RATELIMIT_REDIS): scheme "http"`},
		{args: []string{"superuser", "upsert", "staff@example.org", "a-long-password", "--bogus"}, want: "Error: unknown flag: --bogus"},
		{args: []string{"keys", "create", "--plan", "free", "--name", "x", "--bogus"}, want: "Error: unknown flag: --bogus"},
		{args: []string{"healthcheck", "--bogus"}, want: "Error: unknown flag: --bogus"},
		{args: []string{"version", "extra"}, want: `Error: unknown command "extra" for "petstore version"`},
	} {
		dir := filepath.Join(t.TempDir(), "pb_data")
		// --dir first: cobra takes the argument after an unknown flag for
		// its value, and would call the directory an unknown command.
		cmd := exec.Command(bin, append([]string{"--dir", dir}, tt.args...)...)
		if tt.env != "" {
			cmd.Env = append(os.Environ(), tt.env)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s %q: %v, stderr:\n%s\nwant exit status 1 and %q", tt.env, tt.args, err, stderr.String(), tt.want)
		}
		if strings.Contains(stderr.String(), "hunter2") {
			t.Errorf("%q: the Redis password is in the error:\n%s", tt.args, stderr.String())
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s %q: the data directory was created (%v)", tt.env, tt.args, err)
		}
	}
}
