// Package apptest runs the real petstore app, on real SQLite, behind a real
// HTTP server on a random loopback port, for tests that go through HTTP.
package apptest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/hooks"
	"petstore/internal/api"
	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/limits"
	"petstore/internal/options"
	"petstore/internal/pets"
	"petstore/internal/requestlog"
	"petstore/internal/usage"
	_ "petstore/migrations"
	"petstore/testkit/contract"
)

// Server is a running app.
type Server struct {
	URL    string // http://127.0.0.1:PORT
	App    core.App
	Client *http.Client // checks every /v1 exchange against the OpenAPI document (testkit/contract)
	Dir    string
	// PetsURL is the address of listPets as Location and Link headers name
	// it: under Config.PublicURL, or /v1/pets.
	PetsURL string

	done chan error
}

// Config is what a test may set; zero values are the service's defaults.
type Config struct {
	Dir        string // data directory; a fresh temporary one when empty
	Limits     limits.Config
	Server     options.Server
	Now        func() time.Time // the service's clock (options.Options.Now); time.Now when nil
	RequestLog requestlog.Mode
	PublicURL  string // serve --public-url
	// AuditRetention is how long the audit trail keeps a record (serve
	// --audit-retention); 0: forever.
	AuditRetention time.Duration
	// WebhooksAllowPrivate lets webhook endpoints be loopback addresses
	// (serve --webhooks-allow-private): a test's receiver.
	WebhooksAllowPrivate bool
	// Middleware is bound on the whole router: with a priority above
	// BodyLimit's (-990), it runs inside the /v1 chain, just before the
	// handler (tests inject panics there).
	Middleware *hook.Handler[*core.RequestEvent]
	// Router, when set, is called with the router once every route is bound
	// and before the mux is built (tests wrap handlers there).
	Router func(*router.Router[*core.RequestEvent])
	// MetricsAddr is serve --metrics-addr; empty: no metrics.
	MetricsAddr string
	// AllowBackupRestore is serve --allow-backup-restore.
	AllowBackupRestore bool
	// Console receives the service's console log (options.Options.Console);
	// nil: none.
	Console slog.Handler
	// AccessLog logs one console line per /v1 request (serve --access-log).
	AccessLog bool
	// MayWrite says whether the service's background writers may write
	// now, as a cluster node's fence would (options.Options.MayWrite); nil:
	// always.
	MayWrite func() bool
}

// Slow skips a test that takes seconds by design (floods, bursts, timers,
// shutdowns) under -short, the fast loop; `go test ./...` runs it.
func Slow(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a slow test")
	}
}

// Start serves a new app on dir (a fresh temporary one when empty) with the
// default configuration until the test ends or Stop is called.
func Start(t testing.TB, dir string) *Server {
	t.Helper()
	return StartWith(t, Config{Dir: dir})
}

// StartWith is Start with a configuration.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	dir := cfg.Dir
	if dir == "" {
		dir = t.TempDir()
		if err := copyMigrated(dir); err != nil {
			t.Fatalf("a migrated data directory: %v", err)
		}
	}
	app := newApp(dir)
	if err := app.Bootstrap(); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	if err := app.RunAllMigrations(); err != nil {
		t.Fatalf("migrations: %v", err)
	}
	publicURL, err := api.ParseBaseURL(cfg.PublicURL)
	if err != nil {
		t.Fatalf("--public-url: %v", err)
	}
	service := hooks.Register(app, options.Options{Limits: cfg.Limits, Server: cfg.Server,
		Now: cfg.Now, RequestLog: cfg.RequestLog, PublicURL: publicURL, AuditRetention: cfg.AuditRetention,
		MetricsAddr: cfg.MetricsAddr, WebhooksAllowPrivate: cfg.WebhooksAllowPrivate, AllowBackupRestore: cfg.AllowBackupRestore,
		Console: cfg.Console, AccessLog: cfg.AccessLog, MayWrite: cfg.MayWrite})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		se.Listener = ln
		se.InstallerFunc = nil // no superuser-installer link in tests
		if cfg.Middleware != nil {
			se.Router.Bind(cfg.Middleware)
		}
		if cfg.Router != nil {
			cfg.Router(se.Router)
		}
		return se.Next()
	})

	s := &Server{
		URL:    "http://" + ln.Addr().String(),
		App:    app,
		Client: &http.Client{Timeout: 30 * time.Second, Transport: contract.NewTransport(t, http.DefaultTransport)},
		Dir:    dir,
		done:   make(chan error, 1),
	}
	s.PetsURL = "/v1/pets"
	if cfg.PublicURL != "" {
		s.PetsURL = cfg.PublicURL + "/pets"
	}
	go func() { s.done <- apis.Serve(app, apis.ServeConfig{HttpAddr: ln.Addr().String()}) }()
	t.Cleanup(func() { s.Stop(t) })
	if err := s.waitUntilServing(service); err != nil {
		t.Fatalf("serve: %v", err)
	}
	return s
}

// waitUntilServing returns once the server answers, or with the error that
// stopped it from starting.
func (s *Server) waitUntilServing(service *hooks.Service) error {
	for {
		select {
		case err := <-s.done:
			s.done = nil
			if service.Err() != nil {
				return service.Err()
			}
			return err
		default:
		}
		resp, err := s.Client.Get(s.URL + "/api/health")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop shuts the server down the way SIGTERM does and closes the app; it may
// be called more than once.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.done == nil {
		return
	}
	err := s.App.OnTerminate().Trigger(&core.TerminateEvent{App: s.App}, func(e *core.TerminateEvent) error {
		return e.App.ResetBootstrapState()
	})
	if err != nil {
		t.Errorf("terminate: %v", err)
	}
	if err := <-s.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
	s.done = nil
}

// NewKey creates an API key on plan (with optional overrides) and returns
// it; the plan defaults to free and the name to "test key". The quotas are
// stored as given, even a per-minute quota above the per-day one, which
// apikeys refuses: rate-limit tests make the day window bind first, as it
// does for keys saved before that rule.
func (s *Server) NewKey(t testing.TB, nk apikeys.NewKey) string {
	t.Helper()
	if nk.Plan == "" {
		nk.Plan = "free"
	}
	if nk.Name == "" {
		nk.Name = "test key"
	}
	perMinute, perDay := nk.PerMinute, nk.PerDay
	nk.PerMinute, nk.PerDay = 0, 0
	key, r, err := apikeys.Create(s.App, nk, audit.CLI)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if perMinute != 0 || perDay != 0 {
		_, err := s.App.DB().Update(apikeys.Collection, dbx.Params{apikeys.PerMinuteField: perMinute, apikeys.PerDayField: perDay},
			dbx.HashExp{"id": r.Id}).Execute()
		if err != nil {
			t.Fatalf("set the key's quotas: %v", err)
		}
	}
	return key
}

// Response is a finished exchange: the response with its whole body.
type Response struct {
	*http.Response
	Body []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%s %s: body is not JSON (%v): %q", r.Request.Method, r.Request.URL.Path, err, r.Body)
	}
}

// Error decodes an Error body, failing the test unless the response is one
// with the given status and the spec's shape.
func (r *Response) Error(t testing.TB, status int) api.Error {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", r.Request.Method, r.Request.URL, r.StatusCode, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, want application/json", r.Request.Method, r.Request.URL, ct)
	}
	var fields map[string]any
	r.JSON(t, &fields)
	if len(fields) != 3 {
		t.Fatalf("Error body has fields %v, want exactly code, message, status", fields)
	}
	var e api.Error
	r.JSON(t, &e)
	if e.Code == "" || e.Message == "" || e.Status != status {
		t.Fatalf("Error body %s does not match status %d", r.Body, status)
	}
	return e
}

// Do sends a request. key, when set, goes in Authorization as a bearer token;
// body, when set, is sent as is (a string or []byte) or JSON-encoded.
func (s *Server) Do(t testing.TB, method, path, key string, body any, header ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return s.Send(t, req)
}

// Send sends req and reads the whole response.
func (s *Server) Send(t testing.TB, req *http.Request) *Response {
	t.Helper()
	resp, err := s.Client.Do(contract.ReportTo(req, t))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return &Response{Response: resp, Body: data}
}

// SuperuserToken creates a PocketBase superuser with email and returns one
// of its auth tokens, the credential of the dashboard and the staff page.
func (s *Server) SuperuserToken(t testing.TB, email, password string) string {
	t.Helper()
	collection, err := s.App.FindCollectionByNameOrId(core.CollectionNameSuperusers)
	if err != nil {
		t.Fatal(err)
	}
	su := core.NewRecord(collection)
	su.SetEmail(email)
	su.SetPassword(password)
	if err := s.App.Save(su); err != nil {
		t.Fatalf("create superuser: %v", err)
	}
	token, err := su.NewAuthToken()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// leakPattern matches what an Error message must never show a client: Go
// type and package names, decoder, SQL and runtime internals.
var leakPattern = regexp.MustCompile(`(?i)\bu?int(8|16|32|64)?\b|\bfloat(32|64)\b|(?-i:\bjson(: |\.[A-Z]))|strconv|unmarshal|reflect|(?-i:\*?\b(api|pets)\.[A-Z])|\bstruct\b|map\[|\[\]|goroutine|\bpanic|\bruntime\b|sqlite|\bsql\b|no such (table|column)|\.go:\d`)

// ExpectError asserts that r is the spec's Error body with status and code
// and that its message shows no internals.
func ExpectError(t testing.TB, r *Response, status int, code string) api.Error {
	t.Helper()
	e := r.Error(t, status)
	if e.Code != code {
		t.Errorf("%s %s: code %q, want %q", r.Request.Method, r.Request.URL, e.Code, code)
	}
	if leak := leakPattern.FindString(e.Message); leak != "" {
		t.Errorf("%s %s: message %q shows %q", r.Request.Method, r.Request.URL, e.Message, leak)
	}
	return e
}

// CountRecords is how many records collection holds.
func (s *Server) CountRecords(t testing.TB, collection string) int64 {
	t.Helper()
	n, err := s.App.CountRecords(collection)
	if err != nil {
		t.Fatalf("count %s: %v", collection, err)
	}
	return n
}

// KeyRecord is the api_keys record of key, as staff see it in the dashboard.
func (s *Server) KeyRecord(t testing.TB, key string) *apikeys.APIKey {
	t.Helper()
	r, err := s.App.FindFirstRecordByData(apikeys.Collection, apikeys.HashField, apikeys.Hash(key))
	if err != nil {
		t.Fatalf("find key record: %v", err)
	}
	return &apikeys.APIKey{Record: r}
}

// StaffToken creates a PocketBase superuser and returns one of its auth
// tokens, the credential of the dashboard and the staff routes.
func (s *Server) StaffToken(t testing.TB) string {
	t.Helper()
	return s.SuperuserToken(t, "staff@example.com", "a long enough password")
}

// CreatePet creates a pet through /v1 with key, failing the test unless it
// is created with its Location.
func (s *Server) CreatePet(t testing.TB, key string, body any) pets.Pet {
	t.Helper()
	r := s.Do(t, http.MethodPost, "/v1/pets", key, body)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("create: status %d: %s", r.StatusCode, r.Body)
	}
	var p pets.Pet
	r.JSON(t, &p)
	if got, want := r.Header.Get("Location"), s.PetsURL+"/"+strconv.FormatInt(p.ID, 10); got != want {
		t.Fatalf("Location %q, want %q", got, want)
	}
	return p
}

// SeedKeys stores n API keys straight into the database, in one
// transaction (through apikeys.Create a key takes a few milliseconds): keys
// named "<name> I" on the free plan, the I-th created I minutes after the
// first, each used today (I mod 500 listPets served, I mod 7 refused with 429) and
// last used up to 1,000 minutes ago, with every scope; of every ten, one is revoked, one
// expires (the first half have expired) and one is banned for an hour. It
// returns the keys, in the order of I.
func (s *Server) SeedKeys(t testing.TB, n int, name string) []string {
	t.Helper()
	plan, err := apikeys.FindPlan(s.App, "free")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	date := func(t time.Time) string { return t.Format("2006-01-02 15:04:05.000Z") }
	allScopes, err := json.Marshal(apikeys.ScopeNames(apikeys.Scopes))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	err = s.App.RunInTransaction(func(tx core.App) error {
		for i := range keys {
			keys[i] = apikeys.Generate()
			row := dbx.Params{
				"id": fmt.Sprintf("seed%011d", i), apikeys.NameField: fmt.Sprintf("%s %d", name, i), apikeys.PlanField: plan.Id,
				apikeys.HashField: apikeys.Hash(keys[i]), apikeys.PrefixField: apikeys.DisplayPrefix(keys[i]),
				apikeys.CreatedField: date(now.Add(time.Duration(i-n) * time.Minute)), apikeys.UpdatedField: date(now),
				apikeys.LastUsedField: date(now.Add(-time.Duration(i%1000) * time.Minute)),
				apikeys.ScopesField:   string(allScopes),
			}
			switch i % 10 {
			case 1:
				row[apikeys.RevokedField] = apikeys.RevokedValue
			case 2:
				row[apikeys.ExpiresField] = date(now.Add(time.Duration(i-n/2) * time.Hour))
			case 3:
				row[apikeys.BannedUntilField] = date(now.Add(time.Hour))
			}
			if _, err := tx.DB().Insert(apikeys.Collection, row).Execute(); err != nil {
				return err
			}
			for outcome, n := range map[string]int{"served": i % 500, "limited": i % 7} {
				if n == 0 {
					continue
				}
				_, err := tx.DB().Insert(usage.Collection, dbx.Params{
					"api_key": row["id"], "hour": date(now.Truncate(time.Hour)), "operation": "listPets", "outcome": outcome, "requests": n,
				}).Execute()
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %d keys: %v", n, err)
	}
	return keys
}

// HoldWriteLock takes SQLite's write lock on the app's data.db from a
// connection of its own, as another process would, and returns that
// connection inside its open transaction: the test ends it with ROLLBACK or
// COMMIT (closed, at the latest, when the test ends).
func (s *Server) HoldWriteLock(t testing.TB) *sql.Conn {
	t.Helper()
	db, err := database.Connect(filepath.Join(s.Dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	conn, err := db.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// Redis is the --ratelimit-redis of url, for Config.Limits.
func Redis(t testing.TB, url string) *limits.Redis {
	t.Helper()
	r, err := limits.ParseRedis(url)
	if err != nil {
		t.Fatalf("--ratelimit-redis: %v", err)
	}
	return r
}
