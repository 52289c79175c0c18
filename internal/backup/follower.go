package backup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/filesystem"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/database"
	"petstore/internal/datadir"
	"petstore/internal/replica"
)

// followerCopy is a copy of a cluster follower's data, taken while its
// node follows, and opened by an app of its own: the follower's copy is
// written only by its node's Litestream, so nothing opens it with
// PocketBase (which would make it a WAL database beside Litestream's
// writes). Backups made from it go where the cluster's settings (in the
// copy) send them: S3, or the follower's own backups/ directory.
type followerCopy struct {
	dir    string // the follower's data directory
	temp   string // the copy's own data directory
	app    *core.BaseApp
	use    *datadir.Use
	copied replica.Copied
}

// openFollowerCopy copies the follower's data in dir (replica.CopyFollowed),
// holding dir's shared use lock until close, so that no restore replaces
// it meanwhile, and opens the copy with its settings decrypted by the key
// in the variable encryptionEnv (--encryptionEnv).
func openFollowerCopy(dir, encryptionEnv string, lockTimeout time.Duration) (*followerCopy, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	use, err := datadir.Enter(dir, lockTimeout)
	if err != nil {
		return nil, err
	}
	f := &followerCopy{dir: dir, use: use, temp: filepath.Join(dir, core.LocalTempDirName, "petstore_follower_copy_"+security.PseudorandomString(8))}
	if err := os.MkdirAll(f.temp, 0o700); err != nil {
		f.close()
		return nil, err
	}
	if f.copied, err = replica.CopyFollowed(dir, filepath.Join(f.temp, database.DataFile)); err != nil {
		f.close()
		return nil, err
	}
	if err := datadir.QuickCheck(context.Background(), filepath.Join(f.temp, database.DataFile)); err != nil {
		f.close()
		return nil, fmt.Errorf("the copy of the follower's data fails PRAGMA quick_check: %w", err)
	}
	f.app = core.NewBaseApp(core.BaseAppConfig{DataDir: f.temp, EncryptionEnv: encryptionEnv})
	if err := f.app.Bootstrap(); err != nil {
		f.close()
		return nil, fmt.Errorf("open the copy of the follower's data: %w", err)
	}
	return f, nil
}

// backups opens the storage of the cluster's backups: S3 when its settings
// say so, else the follower's own backups/ directory.
func (f *followerCopy) backups() (*filesystem.System, error) {
	if f.app.Settings().Backups.S3.Enabled {
		return f.app.NewBackupsFilesystem()
	}
	return filesystem.NewLocal(filepath.Join(f.dir, core.LocalBackupsDirName))
}

// close removes the copy and releases the follower's directory.
func (f *followerCopy) close() {
	if f.app != nil {
		f.app.ResetBootstrapState()
	}
	os.RemoveAll(f.temp)
	f.use.Release()
}
