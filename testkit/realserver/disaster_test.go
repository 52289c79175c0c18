package realserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/testkit/contract"
	"petstore/testkit/realserver"
)

// TestDisasterRecoveryFromTheReplica is the restore drill of
// docs/operations.md: petstore serves under `litestream replicate` with
// deploy/litestream.yml, replicating to a directory; staff edit a plan, revoke
// a key and a key gets banned; 8 clients create pets with Idempotency-Keys;
// the whole process group is killed with SIGKILL at a random moment, as
// losing the machine would. `litestream restore` then makes a new data
// directory, and petstore serves from it:
//   - every create acknowledged more than the loss window before the kill
//     (monitor-interval + sync-interval: a second) is there, its getPet
//     answer byte for byte its 201;
//   - PRAGMA integrity_check is ok;
//   - plans and API keys are as on the lost machine, the ban and the
//     revocation hold, the edited plan's limit applies;
//   - retrying every create with its Idempotency-Key replays the kept ones
//     and adds the lost ones once: one pet per create, none twice.
func TestDisasterRecoveryFromTheReplica(t *testing.T) {
	r := newReplication(t)
	rng := seeded(t)
	dir := t.TempDir()
	s := setUpStore(t, r, dir)

	creates, kill := loadAndKill(t, r, s, rng)

	restored := t.TempDir()
	began := time.Now()
	r.restore(t, restored)
	restoreTime := time.Since(began)
	checkIntegrity(t, restored)
	t.Logf("restore: %d pets, data.db %s, `litestream restore` %v",
		countPets(t, restored), fileSize(t, filepath.Join(restored, "data.db")), ms(restoreTime))
	began = time.Now()
	p := start(t, restored)
	t.Logf("petstore serving from the restored directory %v after its start", ms(time.Since(began)))

	checkRecovered(t, p, s, creates, kill, r.window)
	checkAccess(t, p, s, dir, restored)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	checkOnePetPerCreate(t, restored, creates)
}

// TestDisasterRecoveryStandby is the warm standby of docs/operations.md: a
// follower (`litestream restore -f`) keeps a second data directory up to
// date while the primary serves under `litestream replicate` and 8 clients
// create pets. The primary's whole process group is killed with SIGKILL at a
// random moment; the follower is promoted (it applies what the replica holds,
// stops, and petstore serves from its directory under Litestream, to a new
// replica). It measures the time from the kill to the first 200, and checks
// what the restore drill checks: every create acknowledged more than the
// loss window before the kill is there, byte for byte; plans, keys, the ban
// and the revocation hold; retries with Idempotency-Keys replay rather than
// duplicate. The promoted primary's own replica then restores to the same
// pets.
func TestDisasterRecoveryStandby(t *testing.T) {
	r := newReplication(t)
	rng := seeded(t)
	dir := t.TempDir()
	s := setUpStore(t, r, dir)

	standby := t.TempDir()
	follower := r.follow(t, standby)

	creates, kill := loadAndKill(t, r, s, rng)

	// Promotion: the follower applies the replica's last transaction, stops,
	// and petstore serves from its directory, replicating to a new replica.
	applied, err := follower.catchUp(r.latestTXID(t), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	caughtUp := time.Since(kill)
	if err := follower.stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(standby, "data.db-txid")); err != nil {
		t.Fatal(err)
	}
	promoted := &replication{bin: r.bin, config: r.config, window: r.window, replicaURL: "file://" + t.TempDir()}
	p := promoted.serve(t, standby)
	if status, body, err := p.Do(context.Background(), http.MethodGet, "/v1/pets?limit=1", s.writer, nil); status != http.StatusOK {
		t.Fatalf("promoted standby: %d %v %s", status, err, body)
	}
	t.Logf("promotion: first 200 %v after the kill (standby at the replica's transaction %d %v after the kill)",
		ms(time.Since(kill)), applied, ms(caughtUp))

	checkRecovered(t, p, s, creates, kill, r.window)
	checkAccess(t, p, s, dir, standby)
	if err := p.Stop(); err != nil { // Litestream sends what is left to the replica, then exits
		t.Fatal(err)
	}
	checkIntegrity(t, standby)
	checkOnePetPerCreate(t, standby, creates)

	again := t.TempDir()
	promoted.restore(t, again)
	checkIntegrity(t, again)
	checkOnePetPerCreate(t, again, creates)
}

// replication is deploy/litestream.yml with one replica: the configuration
// the drills run, as operators run it.
type replication struct {
	bin         string        // litestream
	config      string        // deploy/litestream.yml, its metrics on metricsAddr
	window      time.Duration // its monitor-interval + sync-interval: a commit older than this is in the replica
	replicaURL  string        // file:///...
	metricsAddr string        // where Litestream serves /metrics
}

// interval reads a duration setting of deploy/litestream.yml.
func interval(t *testing.T, config string, yml []byte, name string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*` + name + `:\s*(\S+)\s*$`).FindSubmatch(yml)
	if m == nil {
		t.Fatalf("%s sets no %s", config, name)
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatalf("%s: %s: %v", config, name, err)
	}
	return d
}

// newReplication finds litestream on PATH and reads deploy/litestream.yml,
// with a replica in a new temporary directory. Without litestream the test
// skips, saying so, unless PETSTORE_REQUIRE_LITESTREAM=1 (CI): then it fails.
func newReplication(t *testing.T) *replication {
	t.Helper()
	bin, err := exec.LookPath("litestream")
	if err != nil {
		msg := "litestream is not on PATH: go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18 and put $(go env GOPATH)/bin on PATH"
		if os.Getenv("PETSTORE_REQUIRE_LITESTREAM") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("litestream version: %v", err)
	}
	config := deployPath(t, "litestream.yml")
	yml, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	monitor, sync := interval(t, config, yml, "monitor-interval"), interval(t, config, yml, "sync-interval")
	t.Logf("litestream %s, monitor-interval %v, sync-interval %v", strings.TrimSpace(string(version)), monitor, sync)
	// The file as it is, but for the port of its metrics: a free one, so
	// that drills running at once on one machine do not share it.
	addr := regexp.MustCompile(`(?m)^addr:\s*\S+\s*$`)
	if !addr.Match(yml) {
		t.Fatalf("%s enables no metrics (addr:)", config)
	}
	metricsAddr := freeAddr(t)
	config = filepath.Join(t.TempDir(), "litestream.yml")
	if err := os.WriteFile(config, addr.ReplaceAll(yml, []byte("addr: "+metricsAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &replication{bin: bin, config: config, window: monitor + sync, replicaURL: "file://" + t.TempDir(), metricsAddr: metricsAddr}
}

// checkMetrics scrapes Litestream's /metrics while it replicates and finds
// data.db's WAL copied and synced: the figures rules.yml alerts on.
func (r *replication) checkMetrics(t *testing.T) {
	t.Helper()
	families := scrape(t, r.metricsAddr)
	for _, name := range []string{"litestream_sync_count", "litestream_total_wal_bytes"} {
		var value float64
		for _, m := range families[name].GetMetric() {
			if strings.HasSuffix(labelsOf(m), "/data.db") {
				value += m.GetCounter().GetValue()
			}
		}
		if value == 0 {
			t.Errorf("Litestream's %s for data.db: %v while petstore writes (%v)", name, value, families[name].GetMetric())
		}
	}
	for _, name := range []string{"litestream_sync_error_count", "litestream_disk_full"} {
		if _, ok := families[name]; !ok {
			t.Errorf("Litestream exports no %s", name)
		}
	}
}

// command is `litestream ARGS` with deploy/litestream.yml's variables set for
// petstore's data directory dir.
func (r *replication) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.bin, args...)
	cmd.Env = append(os.Environ(), "PETSTORE_DIR="+dir, "PETSTORE_REPLICA_URL="+r.replicaURL)
	return cmd
}

// serve runs `litestream replicate -config litestream.yml -exec "petstore
// serve ..."` on dir until the test ends.
func (r *replication) serve(t *testing.T, dir string) *realserver.Process {
	t.Helper()
	wrap := func(serve []string) *exec.Cmd {
		quoted := make([]string, len(serve))
		for i, arg := range serve {
			if strings.Contains(arg, "'") {
				t.Fatalf("cannot quote %q for -exec", arg)
			}
			quoted[i] = "'" + arg + "'"
		}
		return r.command(dir, "replicate", "-config", r.config, "-exec", strings.Join(quoted, " "))
	}
	p, err := realserver.StartUnder(wrap, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	p.CheckContract(t)
	t.Cleanup(p.Kill)
	return p
}

// restore runs `litestream restore` into dir, a new data directory.
func (r *replication) restore(t *testing.T, dir string) {
	t.Helper()
	if out, err := r.command(dir, "restore", "-config", r.config, filepath.Join(dir, "data.db")).CombinedOutput(); err != nil {
		t.Fatalf("litestream restore: %v\n%s", err, out)
	}
}

var ltxName = regexp.MustCompile(`^[0-9a-f]{16}-([0-9a-f]{16})\.ltx$`)

// latestTXID is the last transaction the replica holds, from its files'
// names (ltx/LEVEL/MINTXID-MAXTXID.ltx).
func (r *replication) latestTXID(t *testing.T) uint64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(strings.TrimPrefix(r.replicaURL, "file://"), "ltx", "*", "*.ltx"))
	if err != nil {
		t.Fatal(err)
	}
	var latest uint64
	for _, f := range files {
		if m := ltxName.FindStringSubmatch(filepath.Base(f)); m != nil {
			txid, err := strconv.ParseUint(m[1], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			latest = max(latest, txid)
		}
	}
	return latest
}

// follower is a running `litestream restore -f`.
type follower struct {
	db     string // the data.db it keeps
	cmd    *exec.Cmd
	output bytes.Buffer // read once the process has exited
	exited chan struct{}
}

// follow starts a warm standby of the replica in dir once the replica holds
// a snapshot, and returns when its first restore is done.
func (r *replication) follow(t *testing.T, dir string) *follower {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.latestTXID(t) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the replica holds nothing 30 s after the start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	f := &follower{db: filepath.Join(dir, "data.db"), exited: make(chan struct{})}
	f.cmd = r.command(dir, "restore", "-f", "-config", r.config, f.db)
	f.cmd.Stdout, f.cmd.Stderr = &f.output, &f.output
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = f.cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.exited
	})
	if _, err := f.catchUp(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return f
}

// applied is the last transaction the follower applied (its data.db-txid).
func (f *follower) applied() uint64 {
	data, err := os.ReadFile(f.db + "-txid")
	if err != nil {
		return 0
	}
	txid, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 16, 64)
	return txid
}

// catchUp waits until the follower has applied transaction txid.
func (f *follower) catchUp(txid uint64, timeout time.Duration) (uint64, error) {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-f.exited:
			return 0, fmt.Errorf("litestream restore -f exited: %s", f.output.String())
		default:
		}
		if applied := f.applied(); applied >= txid {
			return applied, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the standby is at transaction %d %v later, want %d", f.applied(), timeout, txid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends follow mode as Ctrl-C does and waits for a clean exit.
func (f *follower) stop() error {
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-f.exited:
	case <-time.After(30 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.exited
		return fmt.Errorf("litestream restore -f did not stop within 30 s: %s", f.output.String())
	}
	if !f.cmd.ProcessState.Success() {
		return fmt.Errorf("litestream restore -f: %v: %s", f.cmd.ProcessState, f.output.String())
	}
	return nil
}

// store is what the drills set up before the load: keys, a plan edit, a
// ban and a revocation, all older than the loss window at the kill.
type store struct {
	p       *realserver.Process // the primary, under litestream replicate
	writer  string              // the clients' key (enterprise, unlimited in practice)
	pro     string              // a pro key; its plan's per-minute limit is edited to proPerMinute
	banned  string              // banned after repeated 429s
	revoked string              // revoked with `petstore keys revoke`
}

const proPerMinute = 301

func setUpStore(t *testing.T, r *replication, dir string) *store {
	t.Helper()
	s := &store{}
	if _, stderr, status := petstore(t, dir, "superuser", "upsert", "staff@example.com", "a long enough password"); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	s.writer, _ = createKey(t, dir, "--plan", "enterprise", "--per-minute", "100000000", "--per-day", "1000000000")
	s.pro, _ = createKey(t, dir, "--plan", "pro")
	s.banned, _ = createKey(t, dir, "--plan", "free", "--per-minute", "1")
	var revokedID string
	s.revoked, revokedID = createKey(t, dir, "--plan", "free")

	s.p = r.serve(t, dir)
	ctx := context.Background()

	// Staff edit the pro plan through PocketBase's API, as the dashboard does.
	status, body, err := s.p.Do(ctx, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"a long enough password"}`))
	var auth struct{ Token string }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &auth) != nil {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}
	status, body, err = s.p.Do(ctx, http.MethodGet, "/api/collections/plans/records?filter=(name='pro')", auth.Token, nil)
	var plans struct{ Items []struct{ ID string } }
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &plans) != nil || len(plans.Items) != 1 {
		t.Fatalf("pro plan: %d %v %s", status, err, body)
	}
	status, body, err = s.p.Do(ctx, http.MethodPatch, "/api/collections/plans/records/"+plans.Items[0].ID, auth.Token,
		[]byte(fmt.Sprintf(`{"per_minute":%d}`, proPerMinute)))
	if err != nil || status != http.StatusOK {
		t.Fatalf("edit the pro plan: %d %v %s", status, err, body)
	}

	for i := 0; ; i++ {
		status, body, err := s.p.Do(ctx, http.MethodGet, "/v1/pets?limit=1", s.banned, nil)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusTooManyRequests && strings.Contains(string(body), `"api_key_banned"`) {
			break
		}
		if i == 100 {
			t.Fatalf("no ban after 100 requests over a limit of 1 a minute: %d %s", status, body)
		}
	}
	if _, _, err := realserver.Keys(bin, dir, "revoke", revokedID); err != nil {
		t.Fatal(err)
	}
	return s
}

// create is one createPet a client sent with an Idempotency-Key.
type create struct {
	idempotencyKey string
	body           []byte
	answer         []byte    // the 201's body; nil when no answer arrived
	acknowledged   time.Time // when the 201 arrived
}

// loadAndKill runs 8 clients creating pets on the primary and kills the
// primary's whole process group after a random time, longer than the
// loss window. It returns every create sent and the moment of the kill.
func loadAndKill(t *testing.T, r *replication, s *store, rng *rand.Rand) ([]*create, time.Time) {
	t.Helper()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const clients = 8
	sent := make([][]*create, clients)
	var wg sync.WaitGroup
	began := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				cr := &create{
					idempotencyKey: fmt.Sprintf("c%d-%d", c, i),
					body:           fmt.Appendf(nil, `{"name":"c%d-%d","categoryId":%d,"status":"pending"}`, c, i, 1+i%1000),
				}
				sent[c] = append(sent[c], cr)
				resp, answer, err := cr.send(client, s.p.URL, s.writer)
				if err != nil {
					return // the primary is gone
				}
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("create %s: %d %s", cr.body, resp.StatusCode, answer)
					return
				}
				cr.answer, cr.acknowledged = answer, time.Now()
			}
		})
	}
	time.Sleep(r.window + time.Duration(500+rng.IntN(2500))*time.Millisecond)
	r.checkMetrics(t)
	kill := time.Now()
	s.p.Kill()
	wg.Wait()

	var all []*create
	acknowledged := 0
	for _, c := range sent {
		for _, cr := range c {
			all = append(all, cr)
			if cr.answer != nil {
				acknowledged++
			}
		}
	}
	elapsed := kill.Sub(began)
	t.Logf("load: %d creates acknowledged in %v (%.0f/s), %d sent; killed the process group",
		acknowledged, ms(elapsed), float64(acknowledged)/elapsed.Seconds(), len(all))
	if acknowledged == 0 {
		t.Fatal("no create was acknowledged")
	}
	return all, kill
}

// send sends the createPet with its Idempotency-Key to the server at url and
// returns the whole answer; err when none arrived.
func (cr *create) send(client *http.Client, url, key string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/pets", bytes.NewReader(cr.body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", cr.idempotencyKey)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// checkRecovered checks the recovered server p against the creates sent to
// the lost one: every create acknowledged more than window before the
// kill is there, its getPet answer byte for byte its 201; then every create
// is retried with its Idempotency-Key, which replays the kept ones (the same
// bytes) and adds the lost ones. It logs how many acknowledged creates were
// lost and how long before the kill.
func checkRecovered(t *testing.T, p *realserver.Process, s *store, creates []*create, kill time.Time, window time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Minute, Transport: contract.NewTransport(t, &http.Transport{MaxIdleConnsPerHost: 64})}
	var mu sync.Mutex
	lost := map[*create]bool{}
	var oldestLost, newestKept time.Duration
	kept, lostOld := 0, 0
	forEach(creates, func(cr *create) {
		if cr.answer == nil {
			return
		}
		var pet struct{ ID int64 }
		if err := json.Unmarshal(cr.answer, &pet); err != nil {
			t.Errorf("201 body %s: %v", cr.answer, err)
			return
		}
		status, body, err := p.Do(context.Background(), http.MethodGet, fmt.Sprint("/v1/pets/", pet.ID), s.writer, nil)
		age := kill.Sub(cr.acknowledged)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			t.Errorf("get pet %d: %v", pet.ID, err)
		case status == http.StatusNotFound:
			lost[cr] = true
			oldestLost = max(oldestLost, age)
			if age > window {
				if lostOld++; lostOld <= 5 {
					t.Errorf("pet %d, acknowledged %v before the kill (more than the loss window, %v), is lost", pet.ID, ms(age), window)
				}
			}
		case status != http.StatusOK || !bytes.Equal(body, cr.answer):
			t.Errorf("pet %d is %d %s, its 201 was %s", pet.ID, status, body, cr.answer)
		default:
			kept++
			if newestKept == 0 || age < newestKept {
				newestKept = age
			}
		}
	})
	t.Logf("lost acknowledged creates: %d of %d, %d of them older than the loss window (%v); replica lag at the kill: the oldest lost was acknowledged %v before it, the newest kept %v",
		len(lost), kept+len(lost), lostOld, window, ms(oldestLost), ms(newestKept))
	if lostOld > 0 {
		t.Errorf("%d creates acknowledged more than %v before the kill are lost", lostOld, window)
	}

	// The clients retry every create, answered or not, with its key.
	replayed, added := 0, 0
	forEach(creates, func(cr *create) {
		resp, body, err := cr.send(client, p.URL, s.writer)
		if err != nil {
			t.Errorf("retry %s: %v", cr.body, err)
			return
		}
		isReplay := resp.Header.Get("Idempotent-Replayed") == "true"
		mu.Lock()
		defer mu.Unlock()
		switch {
		case resp.StatusCode != http.StatusCreated:
			t.Errorf("retry %s: %d %s", cr.body, resp.StatusCode, body)
		case cr.answer != nil && !lost[cr] && (!isReplay || !bytes.Equal(body, cr.answer)):
			t.Errorf("retry of a kept create %s: replayed %v, %s; want the replay of %s", cr.body, isReplay, body, cr.answer)
		case lost[cr] && isReplay:
			t.Errorf("retry of a lost create %s was replayed: %s", cr.body, body)
		case isReplay:
			replayed++
		default:
			added++
		}
	})
	t.Logf("retries: %d replayed, %d added", replayed, added)
}

// forEach runs f on every create, 8 at a time.
func forEach(creates []*create, f func(*create)) {
	work := make(chan *create)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for cr := range work {
				f(cr)
			}
		})
	}
	for _, cr := range creates {
		work <- cr
	}
	close(work)
	wg.Wait()
}

// checkAccess checks that plans, keys, the ban and the revocation are on
// the recovered server p as they were on the lost machine (lostDir, read
// after the kill).
func checkAccess(t *testing.T, p *realserver.Process, s *store, lostDir, dir string) {
	t.Helper()
	const plans = "SELECT * FROM plans ORDER BY id"
	const keys = "SELECT id, name, prefix, key_hash, plan, per_minute, per_day, expires, revoked, banned_until, ban_lifted, previous_hash, previous_until, created FROM api_keys ORDER BY id"
	for _, query := range []string{plans, keys} {
		if want, got := dump(t, lostDir, query), dump(t, dir, query); got != want {
			t.Errorf("%s\nrestored:\n%s\nlost machine:\n%s", query, got, want)
		}
	}

	ctx := context.Background()
	resp, body, err := p.Exchange(ctx, http.MethodGet, "/v1/pets?limit=1", s.pro, nil)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("RateLimit-Policy"), fmt.Sprintf(`"minute";q=%d;`, proPerMinute)) {
		t.Errorf("pro key after the restore: %v %v %s, want 200 under the edited plan's %d a minute", resp, err, body, proPerMinute)
	}
	if status, body, _ := p.Do(ctx, http.MethodGet, "/v1/pets", s.banned, nil); status != http.StatusTooManyRequests || !strings.Contains(string(body), `"api_key_banned"`) {
		t.Errorf("banned key after the restore: %d %s, want 429 api_key_banned", status, body)
	}
	if status, body, _ := p.Do(ctx, http.MethodGet, "/v1/pets", s.revoked, nil); status != http.StatusUnauthorized {
		t.Errorf("revoked key after the restore: %d %s, want 401", status, body)
	}
}

// dump is a query's rows on dir's data.db, one line each.
func dump(t *testing.T, dir, query string) string {
	t.Helper()
	db, err := core.DefaultDBConnect(filepath.Join(dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.DB().Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for rows.Next() {
		values := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&out, values...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// checkIntegrity runs PRAGMA integrity_check on dir's data.db.
func checkIntegrity(t *testing.T, dir string) {
	t.Helper()
	if got := dump(t, dir, "PRAGMA integrity_check"); got != "ok\n" {
		t.Fatalf("integrity_check of %s: %q", dir, got)
	}
}

func countPets(t *testing.T, dir string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(dump(t, dir, "SELECT count(*) FROM pets")))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkOnePetPerCreate checks dir's pets after every create was retried:
// exactly one pet for each create sent, with the fields it sent.
func checkOnePetPerCreate(t *testing.T, dir string, creates []*create) {
	t.Helper()
	type pet struct {
		Name       string `db:"name" json:"name"`
		CategoryID int64  `db:"categoryId" json:"categoryId"`
		Status     string `db:"status" json:"status"`
	}
	sent := map[string]pet{}
	for _, cr := range creates {
		var p pet
		if err := json.Unmarshal(cr.body, &p); err != nil {
			t.Fatal(err)
		}
		sent[p.Name] = p
	}
	db, err := core.DefaultDBConnect(filepath.Join(dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored []pet
	if err := db.Select("name", "categoryId", "status").From("pets").All(&stored); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range stored {
		if sent[p.Name] != p || seen[p.Name] {
			t.Fatalf("stored pet %+v: not one of the %d creates sent, or twice", p, len(creates))
		}
		seen[p.Name] = true
	}
	if len(seen) != len(sent) {
		t.Fatalf("%d pets stored, %d creates sent", len(seen), len(sent))
	}
}

func fileSize(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%.1f MB", float64(fi.Size())/(1<<20))
}

func seeded(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
