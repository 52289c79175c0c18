package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/osutils"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/apikeys"
	"petstore/internal/atrest"
	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/fielderr"
	"petstore/internal/fixedcollections"
	"petstore/internal/requestid"
	"petstore/internal/webhooks"
)

// errBackupRestoreOff answers an upload or a restore of a backup through
// PocketBase's API (the dashboard's Settings, Backups) without
// --allow-backup-restore.
const errBackupRestoreOff = "uploading and restoring backups is off: a restore replaces every key, plan and pet with the backup's. " +
	"Start petstore with --allow-backup-restore (PETSTORE_ALLOW_BACKUP_RESTORE=true) to allow it (docs/operations.md, \"Backups\")"

// errBackupRestoreInUse answers a restore through PocketBase's API while
// another process has the data directory open: the restore would replace
// the databases under it, which would go on serving, and writing to, the
// ones replaced. A conflict: the other process's presence rules it out.
var errBackupRestoreInUse = &fielderr.Error{Kind: errConflict, Message: "another petstore process has this data directory open (another instance serving it, or a command): " +
	"a restore would replace the databases under it. Stop the other instances, then restore again; or stop every one and run " +
	"petstore backup restore (docs/operations.md, \"Backups from the command line\")"}

// The kinds of the guard's refusals: errUnfit of a backup that prepare
// finds unfit to restore, errConflict of a restore that the processes
// holding the data directory rule out.
var (
	errUnfit    = &fielderr.Kind{Code: "validation_backup_unfit"}
	errConflict = &fielderr.Kind{Code: "validation_backup_in_use", Conflict: true}
)

// The routes of PocketBase's backups API.
const (
	backupCreatePattern   = "POST /api/backups"
	backupUploadPattern   = "POST /api/backups/upload"
	backupDownloadPattern = "GET /api/backups/{key}"
	backupDeletePattern   = "DELETE /api/backups/{key}"
	backupRestorePattern  = "POST /api/backups/{key}/restore"
)

// autoBackupPrefix starts the names of the backups PocketBase's cron makes
// (Settings, Backups, auto backups).
const autoBackupPrefix = "@auto_pb_backup_"

// backupGuard audits every backup's creation, download, upload, restore and
// deletion (a backup holds every key's hash and the whole trail), and lets
// uploads and restores through only when allowed. A restore carries the
// audit trail across itself (audit.CarryAcrossRestore), so that no backup,
// older or edited, takes a record away, and revokes again the keys the trail
// says were revoked.
type backupGuard struct {
	allowRestore bool
	fixed        []fixedcollections.Collection
	held         *datadir.HeldUse // the process's use lock; nil: none held
	log          *slog.Logger
	// creating is who asked for the backup the API is creating: the API
	// creates one at a time, in the request.
	creating   atomic.Pointer[audit.Actor]
	createLock sync.Mutex
	restoring  sync.Map // backup name → its pendingRestore
}

// pendingRestore is a restore the API has answered and PocketBase is
// about to run: who asked, and the backup prepared (extracted and checked)
// in the request.
type pendingRestore struct {
	by       audit.Actor
	prepared string
	leftOut  []string
}

// Bind binds the guard of PocketBase's backups API and its restores:
// uploads and restores through the API only when allowRestore says so
// (serve --allow-backup-restore), restores only while no other process
// has the data directory open (held, the process's own use lock, is made
// exclusive for the restore), and only of a backup that prepare finds fit,
// its fixed collections as their migrations make them.
func Bind(app core.App, allowRestore bool, fixed []fixedcollections.Collection, held *datadir.HeldUse, log *slog.Logger) {
	g := &backupGuard{allowRestore: allowRestore, fixed: fixed, held: held, log: log}
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		if err := g.carryTrail(se.App); err != nil {
			return err
		}
		se.Router.Bind(&hook.Handler[*core.RequestEvent]{
			Id:       "petstoreBackupsGuard",
			Priority: fixedcollections.GuardPriority,
			Func:     g.guard,
		})
		return se.Next()
	})
	app.OnBackupCreate().BindFunc(g.created)
	app.OnBackupRestore().BindFunc(g.restore)
	// Before PocketBase deletes its temporary directory, where a restore
	// left the database it replaced.
	app.OnBootstrap().BindFunc(func(e *core.BootstrapEvent) error {
		if err := audit.KeepTrailOfRestore(e.App.DataDir()); err != nil {
			return fmt.Errorf("could not keep the audit trail from before the backup restore: %w", err)
		}
		return e.Next()
	})
}

// guard refuses or audits the backups API's requests.
func (g *backupGuard) guard(e *core.RequestEvent) error {
	key := e.Request.PathValue("key")
	switch e.Request.Pattern {
	case backupCreatePattern:
		g.createLock.Lock()
		defer g.createLock.Unlock()
		by := audit.ActorOf(e)
		g.creating.Store(&by)
		defer g.creating.Store(nil)
		return e.Next()
	case backupRestorePattern:
		if !g.allowRestore {
			return e.ForbiddenError(errBackupRestoreOff, nil)
		}
		// Asked now, so that the dashboard says why; the restore, a
		// moment after the answer, asks again and holds the lock.
		if err := g.exclusive(); err != nil {
			return err
		}
		if err := g.held.Shared(); err != nil {
			return err
		}
		by := audit.ActorOf(e)
		if ok, err := g.exists(e.App, key); err != nil || !ok {
			return e.Next() // PocketBase's answer
		}
		// Prepared now, so that a refusal is the answer, with its reasons.
		prepared, leftOut, err := g.prepare(e.Request.Context(), e.App, key)
		if err != nil {
			g.refused(e.App, key, by, err)
			return fielderr.New(errUnfit, "", "the backup %s is not restored: %s", key, err.Error())
		}
		g.restoring.Store(key, pendingRestore{by: by, prepared: prepared, leftOut: leftOut})
		g.log.Warn("Backup restore requested: the service restarts with the backup's data", "backup", key, "actor", by.ID, "actorEmail", by.Email)
		if err := e.Next(); err != nil {
			g.restoring.Delete(key)
			os.RemoveAll(prepared)
			return err
		}
		return nil
	case backupUploadPattern:
		if !g.allowRestore {
			return e.ForbiddenError(errBackupRestoreOff, nil)
		}
		if err := e.Next(); err != nil {
			return err
		}
		name := ""
		if f := e.Request.MultipartForm; f != nil && len(f.File["file"]) > 0 {
			name = f.File["file"][0].Filename
		}
		g.write(e.App, audit.BackupUploaded, name, audit.ActorOf(e))
		return nil
	case backupDeletePattern:
		if err := e.Next(); err != nil {
			return err
		}
		g.write(e.App, audit.BackupDeleted, key, audit.ActorOf(e))
		return nil
	case backupDownloadPattern:
		if err := e.Next(); err != nil {
			return err
		}
		if status := e.Status(); status != http.StatusOK && status != http.StatusPartialContent {
			return nil
		}
		// The download route takes a superuser's file token, not the
		// Authorization header.
		by := audit.Actor{Address: e.RealIP(), RequestID: requestid.From(e.Request.Context())}
		if r, err := e.App.FindAuthRecordByToken(e.Request.URL.Query().Get("token"), core.TokenTypeFile); err == nil {
			by.ID, by.Email = r.Id, r.Email()
		}
		g.write(e.App, audit.BackupDownloaded, key, by)
		return nil
	}
	return e.Next()
}

// created audits a backup once made: the API's for the superuser who asked,
// the auto backups' for the system.
func (g *backupGuard) created(e *core.BackupEvent) error {
	if err := e.Next(); err != nil {
		return err
	}
	by := audit.System
	if creating := g.creating.Load(); creating != nil && !strings.HasPrefix(e.Name, autoBackupPrefix) {
		by = *creating
	}
	g.write(e.App, audit.BackupCreated, e.Name, by)
	return nil
}

// restore replaces PocketBase's restore: it puts in place the backup
// prepared (in the request, else now), never the zip as PocketBase would
// extract it, notes the restore for the next start, which carries the trail
// across it (carryTrail), and restarts the process.
func (g *backupGuard) restore(e *core.BackupEvent) error {
	p := pendingRestore{by: audit.System}
	if v, ok := g.restoring.LoadAndDelete(e.Name); ok {
		p = v.(pendingRestore)
	}
	if p.prepared != "" {
		defer os.RemoveAll(p.prepared)
	}
	// Held exclusively until the process is replaced: a process that
	// starts meanwhile waits for the restored data.
	if err := g.exclusive(); err != nil {
		g.log.Warn("Backup restore refused", "backup", e.Name, "error", err.Error())
		return err
	}
	err := func() error {
		if p.prepared == "" {
			var err error
			if p.prepared, p.leftOut, err = g.prepare(e.Context, e.App, e.Name); err != nil {
				g.refused(e.App, e.Name, p.by, err)
				return err
			}
			defer os.RemoveAll(p.prepared)
		}
		note := audit.Restore{Backup: e.Name, By: p.by, Requested: time.Now().UTC(), LeftOut: p.leftOut}
		if err := audit.MarkRestore(e.App.DataDir(), note); err != nil {
			return fmt.Errorf("could not note the restore for the audit trail: %w", err)
		}
		err := replace(e.App, p.prepared) // on success, the process is replaced and replace does not return
		audit.UnmarkRestore(e.App.DataDir())
		return err
	}()
	return errors.Join(err, g.held.Shared())
}

// replace moves app's data to the temporary directory, where the next start
// finds it (audit.KeepTrailOfRestore), and the data in prepared in its
// place, while holding both databases' write locks, as PocketBase's restore
// does; then it restarts the process. If the restart fails, the data is
// put back.
func replace(app core.App, prepared string) error {
	old := filepath.Join(app.DataDir(), core.LocalTempDirName, "old_pb_data_"+security.PseudorandomString(8))
	swap := func(from, to string) error {
		return app.RunInTransaction(func(tx core.App) error {
			return tx.AuxRunInTransaction(func(tx core.App) error {
				if err := osutils.MoveDirContent(tx.DataDir(), from, keptInPlace...); err != nil {
					return fmt.Errorf("move the data directory's content to %s: %w", from, err)
				}
				if err := osutils.MoveDirContent(to, tx.DataDir(), keptInPlace...); err != nil {
					return errors.Join(fmt.Errorf("move %s into the data directory: %w", to, err), osutils.MoveDirContent(from, tx.DataDir()))
				}
				return nil
			})
		})
	}
	if err := swap(old, prepared); err != nil {
		return err
	}
	if err := app.Restart(); err != nil {
		return errors.Join(fmt.Errorf("restart the process with the restored data: %w", err), swap(prepared, old))
	}
	return nil
}

// exists tells whether app's backups hold name.
func (g *backupGuard) exists(app core.App, name string) (bool, error) {
	fsys, err := app.NewBackupsFilesystem()
	if err != nil {
		return false, err
	}
	defer fsys.Close()
	return fsys.Exists(name)
}

// prepare fetches the backup name from app's backups (pb_data/backups, or
// S3) and prepares it for its restore (prepare).
func (g *backupGuard) prepare(ctx context.Context, app core.App, name string) (string, []string, error) {
	temp := filepath.Join(app.DataDir(), core.LocalTempDirName)
	zip := filepath.Join(app.DataDir(), core.LocalBackupsDirName, filepath.Base(name))
	if app.Settings().Backups.S3.Enabled {
		if err := os.MkdirAll(temp, datadir.DirMode); err != nil {
			return "", nil, err
		}
		fetched, err := os.CreateTemp(temp, "pb_restore_zip")
		if err != nil {
			return "", nil, err
		}
		defer os.Remove(fetched.Name())
		err = func() error {
			fsys, err := app.NewBackupsFilesystem()
			if err != nil {
				return err
			}
			defer fsys.Close()
			fsys.SetContext(ctx)
			r, err := fsys.GetReader(name)
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.Copy(fetched, r)
			return err
		}()
		if err := errors.Join(err, fetched.Close()); err != nil {
			return "", nil, fmt.Errorf("fetch the backup %s: %w", name, err)
		}
		zip = fetched.Name()
	}
	dir, leftOut, err := prepare(ctx, zip, temp, g.fixed)
	if err != nil {
		return "", nil, err
	}
	if err := checkKey(app, dir); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, leftOut, nil
}

// checkKey refuses a backup, extracted in dir, whose secrets at rest (its
// webhook secrets, PocketBase's settings) do not open with the key this
// process serves with: the service it restarts with the backup's data
// would not start. `petstore backup restore` restores it, for a start with
// the key it was made under.
func checkKey(app core.App, dir string) error {
	key, err := atrest.FromEnv(app)
	if err != nil {
		return err
	}
	db, err := core.DefaultDBConnect(filepath.Join(dir, database.DataFile))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := errors.Join(webhooks.CheckSecrets(db, key), atrest.CheckSettings(db, key)); err != nil {
		return fmt.Errorf("it was made under another encryption key than the one --encryptionEnv names now (%w); "+
			"restore it with petstore backup restore into the stopped directory and start with the key it was made under, "+
			"then rotate (docs/operations.md, \"Secrets at rest\")", err)
	}
	return nil
}

// refused audits, and logs, the refusal of the restore of the backup name
// that by asked for: why, each object or entry refused named.
func (g *backupGuard) refused(app core.App, name string, by audit.Actor, why error) {
	reasons := []string{why.Error()}
	var schema *SchemaError
	var entries *RefusedEntriesError
	switch {
	case errors.As(why, &schema):
		reasons = schema.Refused
	case errors.As(why, &entries):
		reasons = entries.Entries
	}
	g.log.Warn("Backup restore refused", "backup", name, "error", why.Error())
	if err := audit.Write(app, audit.Entry{Action: audit.BackupRestoreRefused, By: by, Details: map[string]any{"backup": name, "refused": reasons}}); err != nil {
		g.log.Error("Could not audit "+string(audit.BackupRestoreRefused), "backup", name, "error", err)
	}
}

// exclusive makes the process's use lock exclusive: errBackupRestoreInUse
// while another process has the data directory open.
func (g *backupGuard) exclusive() error {
	err := g.held.Exclusive()
	if errors.Is(err, datadir.ErrInUse) {
		return errBackupRestoreInUse
	}
	return err
}

// carryTrail carries the trail from before a restore into the restored
// database, revokes again the keys revoked there, and records the restore,
// in one transaction; nothing when no restore happened. Until it succeeds,
// serve does not start, and each start tries again.
func (g *backupGuard) carryTrail(app core.App) error {
	var carried *audit.Carried
	err := app.RunInTransaction(func(tx core.App) error {
		var err error
		if carried, err = audit.CarryAcrossRestore(tx); err != nil || carried == nil {
			return err
		}
		revoked, err := apikeys.RevokeAgain(tx)
		if err != nil {
			return err
		}
		// Counts, not ids: the details are bounded, and each key revoked
		// again has its key.revoked record in the trail.
		details := map[string]any{
			"backup": carried.Backup, "requested": carried.Requested, "carried": carried.Records, "revokedAgain": len(revoked),
		}
		if len(carried.LeftOut) > 0 {
			details["leftOut"] = carried.LeftOut
		}
		return audit.Write(tx, audit.Entry{Action: audit.BackupRestored, By: carried.By, Details: details})
	})
	if err != nil {
		return fmt.Errorf("could not carry the audit trail from before the backup restore into the restored database: %w; "+
			"each start tries again. To give up the trail from before the restore, remove %s", err, audit.CarryDir(app.DataDir()))
	}
	if carried == nil {
		return nil
	}
	if err := audit.DoneCarrying(app.DataDir()); err != nil {
		g.log.Error("Could not remove the audit trail kept from before the backup restore", "error", err)
	}
	return nil
}

// write audits an action on the backup named name, once it is done (its
// answer written): a failure is logged.
func (g *backupGuard) write(app core.App, action audit.Action, name string, by audit.Actor) {
	if err := audit.Write(app, audit.Entry{Action: action, By: by, Details: map[string]any{"backup": name}}); err != nil {
		g.log.Error("Could not audit "+string(action), "backup", name, "error", err)
	}
}
