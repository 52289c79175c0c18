package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/database"
	"petstore/internal/logging"
	"petstore/internal/replica"
	"petstore/internal/version"
)

// StartupConfig guards the data directory while a command opens it.
type StartupConfig struct {
	// Serving is true for `serve`: it checks the database and logs the
	// directory it opened; the other commands only wait, refuse and migrate.
	Serving bool
	// Cluster is true for serve in cluster mode: the data directory may
	// hold a follower's copy, which the node follows, promotes or sets aside.
	Cluster bool
	// LockTimeout bounds the wait for another process's start (--lock-timeout).
	LockTimeout time.Duration
	// QuickCheck bounds serve's PRAGMA quick_check of data.db
	// (--quick-check); 0 skips it.
	QuickCheck time.Duration
}

// Defaults of StartupConfig.
const (
	DefaultLockTimeout = 5 * time.Minute
	DefaultQuickCheck  = time.Minute
)

// restoreSteps is what a self-hoster does with a damaged database or a
// migration gone wrong, logged with the refusal.
const restoreSteps = "stop every petstore on this data directory; move data.db, data.db-wal and data.db-shm out of it; " +
	"restore data.db from Litestream (litestream restore -o DIR/data.db REPLICA_URL), or restore a backup from DIR/backups (petstore backup restore --dir DIR NAME), " +
	"or copy DIR/backups/pre-upgrade-*.db to DIR/data.db; start petstore again (docs/operations.md, \"Restore\")"

// BindStartup guards the app's bootstrap, which opens the databases and
// applies PocketBase's migrations, and applies petstore's right after it:
//   - the data directory and everything in it become the owner's alone;
//   - serve runs PRAGMA quick_check on data.db, within cfg.QuickCheck, and
//     refuses a damaged database;
//   - one process at a time goes on, holding datadir's start lock: a second
//     start waits for the first to finish migrating rather than meeting its
//     write transaction ("database is locked");
//   - data that records migrations this binary does not know is refused;
//   - before pending migrations change a database that has data, a copy
//     goes to backups/pre-upgrade-TIME.db;
//   - the migrations are applied, each one logged.
//
// console logs what happens before the bootstrap, when PocketBase's logs
// (the dashboard's half of log, the service's logger) do not exist yet. For
// serve, beforeOpen starts the parts that run before the database opens
// (the lifecycle's early parts), once the directory is the owner's alone and
// before data.db is checked.
//
// It returns the use lock the process holds once bootstrapped, which the
// caller releases when the app terminates (HeldUse.Release).
func BindStartup(app core.App, cfg StartupConfig, console slog.Handler, log *slog.Logger, beforeOpen func() error) *HeldUse {
	held := &HeldUse{}
	app.OnBootstrap().Bind(&hook.Handler[*core.BootstrapEvent]{
		Id: "petstoreStartup",
		Func: func(e *core.BootstrapEvent) error {
			early := slog.New(slog.DiscardHandler)
			if console != nil {
				early = slog.New(console)
			}
			return startup(e, cfg, early, log, beforeOpen, held.hold)
		},
	})
	return held
}

// HeldUse is the data directory's use lock (Enter), held from the bootstrap
// until Release. A nil HeldUse, or one before the bootstrap,
// holds nothing: its Exclusive and Shared do nothing.
type HeldUse struct {
	mu  sync.Mutex
	use *Use
}

// hold keeps use as the held use lock, releasing the one held before.
func (h *HeldUse) hold(use *Use) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.use.Release()
	h.use = use
}

// Release releases the held lock, when the app terminates.
func (h *HeldUse) Release() { h.hold(nil) }

// Exclusive makes the held lock exclusive (Use.Exclusive): ErrInUse while
// another process has the directory open. A restore through PocketBase's
// API takes it so, as an offline restore does (TakeOver).
func (h *HeldUse) Exclusive() error { return h.convert((*Use).Exclusive) }

// Shared makes the held lock shared again, after Exclusive.
func (h *HeldUse) Shared() error { return h.convert((*Use).Shared) }

func (h *HeldUse) convert(to func(*Use) error) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.use == nil {
		return nil
	}
	return to(h.use)
}

// startup runs the steps of BindStartup's guard, in order, around
// PocketBase's bootstrap (e.Next).
func startup(e *core.BootstrapEvent, cfg StartupConfig, early, log *slog.Logger, beforeOpen func() error, hold func(*Use)) error {
	s, err := newStart(e.App, cfg, early, log)
	if err != nil {
		return err
	}
	s.secure()
	// Held until the app terminates: an offline restore (petstore backup
	// restore) refuses the directory meanwhile.
	use, err := Enter(s.dir, cfg.LockTimeout)
	if err != nil {
		return err
	}
	hold(use)
	if err := s.refuseFollowersCopy(); err != nil {
		return err
	}
	if cfg.Serving {
		if err := beforeOpen(); err != nil {
			return err
		}
	}
	if err := s.checkDatabase(); err != nil {
		return err
	}
	lock, err := s.waitForOtherStarts()
	if err != nil {
		return err
	}
	defer lock.Release()
	state, err := s.inspect()
	if err != nil {
		return err
	}
	if err := s.copyBeforeMigrating(state); err != nil {
		return err
	}
	// PocketBase's bootstrap: it opens the databases and applies its own
	// migrations.
	if err := e.Next(); err != nil {
		return err
	}
	return s.migrate(e.App, state)
}

// start is one start of the data directory: what its steps share.
type start struct {
	ctx         context.Context
	cfg         StartupConfig
	dir, dbPath string
	early, log  *slog.Logger
	// routine is the level of a start's routine events: the CLI keeps its
	// stderr for its own lines ("Error: …" first on a failure), so they
	// are serve's to tell.
	routine slog.Level
}

func newStart(app core.App, cfg StartupConfig, early, log *slog.Logger) (*start, error) {
	dir, err := filepath.Abs(app.DataDir())
	if err != nil {
		return nil, err
	}
	routine := slog.LevelInfo
	if !cfg.Serving {
		routine = slog.LevelDebug
	}
	return &start{ctx: context.Background(), cfg: cfg, dir: dir, dbPath: filepath.Join(dir, database.DataFile),
		early: early, log: log, routine: routine}, nil
}

// secure makes the data directory and everything in it the owner's alone;
// a failure is logged, not fatal.
func (s *start) secure() {
	changed, err := Secure(s.dir)
	if err != nil {
		s.early.Warn("Could not make the data directory its owner's alone", "dataDir", s.dir, "error", err)
	} else if changed > 0 {
		s.early.Log(s.ctx, s.routine, "Took group and other permissions from the data directory's entries", "dataDir", s.dir, "changed", changed)
	}
}

// refuseFollowersCopy refuses, outside cluster mode, a cluster follower's
// copy: it changes only by what the leader ships, so a command's write
// there would be overwritten, or break the copy, and a single server would
// serve a copy that may lag.
func (s *start) refuseFollowersCopy() error {
	if s.cfg.Cluster {
		return nil
	}
	following, leader, err := replica.Following(s.dir)
	if err != nil || !following {
		return err
	}
	if leader == "" {
		leader = "not known to this node yet"
	}
	return fmt.Errorf("%s is a cluster follower's copy of the leader's data: run commands with the leader's --dir, on the leader's machine; the leader, as this follower last knew it: %s (any node's /readyz names the leader now). Serve this directory with --cluster-etcd", s.dir, leader)
}

// checkDatabase runs serve's PRAGMA quick_check of data.db (quickCheck),
// unless --quick-check is 0.
func (s *start) checkDatabase() error {
	if !s.cfg.Serving || s.cfg.QuickCheck <= 0 {
		return nil
	}
	return quickCheck(s.ctx, s.dbPath, s.cfg.QuickCheck, s.early)
}

// waitForOtherStarts takes the start lock, waiting for another process's
// start to finish migrating, at most --lock-timeout.
func (s *start) waitForOtherStarts() (*Lock, error) {
	lock, err := Acquire(s.dir, s.cfg.LockTimeout, func(holder string) {
		s.early.Info("Waiting for another petstore process to open the data directory and apply migrations",
			"lock", filepath.Join(s.dir, LockFile), "holderPid", holder, "lockTimeout", s.cfg.LockTimeout.String())
	})
	if err != nil {
		s.early.Error("Could not start", "error", err)
	}
	return lock, err
}

// inspect reads which migrations data.db records, refusing data that
// records migrations this binary does not know.
func (s *start) inspect() (State, error) {
	state, err := Inspect(s.ctx, s.dbPath, KnownMigrations())
	if err != nil {
		return state, err
	}
	if len(state.Unknown) > 0 {
		err := fmt.Errorf("the data directory %s holds %d migrations this petstore (%s) does not know, the latest %s: the data comes from a newer petstore; "+
			"run that version, or roll back by restoring the copy it made before upgrading (backups/pre-upgrade-*.db; docs/operations.md, \"Upgrades and rollback\")",
			s.dir, len(state.Unknown), version.Read(), state.Unknown[len(state.Unknown)-1])
		s.early.Error("Refusing data from a newer petstore", "dataDir", s.dir, "unknownMigrations", state.Unknown, "error", err)
		return state, err
	}
	if s.cfg.Serving {
		s.early.Info("Opened the data directory", "dataDir", s.dir, "empty", state.Empty,
			"migrationsApplied", state.Applied, "migrationsPending", len(state.Pending))
	}
	return state, nil
}

// copyBeforeMigrating copies a database that has data to
// backups/pre-upgrade-TIME.db before pending migrations change it.
func (s *start) copyBeforeMigrating(state State) error {
	if state.Empty || len(state.Pending) == 0 {
		return nil
	}
	started := time.Now()
	backup, err := Backup(s.ctx, s.dir, s.dbPath, started)
	if err != nil {
		s.early.Error("Could not copy the database before applying migrations; nothing was changed", "error", err)
		return err
	}
	s.early.Info("Copied the database before applying migrations", "backup", backup,
		"pending", state.Pending, "took_ms", logging.Milliseconds(time.Since(started)))
	return nil
}

// migrate applies petstore's migrations after PocketBase's bootstrap and
// logs each one pending before it, PocketBase's and petstore's alike.
func (s *start) migrate(app core.App, state State) error {
	list := core.MigrationsList{}
	list.Copy(core.SystemMigrations)
	list.Copy(core.AppMigrations)
	if _, err := core.NewMigrationsRunner(app, list).Up(); err != nil {
		s.log.Error("A migration failed; the database is as it was before it", "error", err)
		return err
	}
	if state.Empty && len(state.Pending) > 0 {
		s.log.Log(s.ctx, s.routine, "Created the database", "dataDir", s.dir, "migrationsApplied", len(state.Pending))
		return nil
	}
	for _, file := range state.Pending {
		s.log.Info("Migration applied", "migration", file)
	}
	return nil
}

// quickCheck refuses a damaged data.db; a check that runs out of time
// lets the start go on.
func quickCheck(ctx context.Context, dbPath string, timeout time.Duration, log *slog.Logger) error {
	if info, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0) {
		return nil // a first start: nothing to check
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	err := QuickCheck(ctx, dbPath)
	took := logging.Milliseconds(time.Since(started))
	switch {
	case err == nil:
		log.Info("data.db passed PRAGMA quick_check", "took_ms", took)
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		log.Warn("PRAGMA quick_check of data.db did not finish in time; starting without it", "quick_check_ms", logging.Milliseconds(timeout))
		return nil
	case errors.Is(err, ErrDamaged):
		err = fmt.Errorf("%s is damaged (%w); petstore does not serve it. Restore it: %s. "+
			"--quick-check 0 starts without the check, to read out what is left", dbPath, err, restoreSteps)
		log.Error("Refusing a damaged database", "database", dbPath, "error", err)
		return err
	}
	return fmt.Errorf("PRAGMA quick_check of %s: %w", dbPath, err)
}

// KnownMigrations names every migration of this binary, PocketBase's and
// petstore's, in the order they apply.
func KnownMigrations() []string {
	var files []string
	for _, list := range []core.MigrationsList{core.SystemMigrations, core.AppMigrations} {
		for _, m := range list.Items() {
			files = append(files, m.File)
		}
	}
	return files
}
