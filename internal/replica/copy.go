package replica

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"

	"petstore/internal/database"
)

// SQLite's shared range of lock bytes (os_unix.c), two bytes after its
// pending byte at 1 GiB: a reader holds a read lock on it while it reads;
// Litestream's follow mode takes a write lock on it (and on the pending
// byte) before it writes a transaction's pages.
const (
	sqliteSharedFirst = 0x40000000 + 2
	sqliteSharedSize  = 510
)

// Copied is what CopyFollowed copied: the copy of Cluster's term Term, up
// to transaction Applied.
type Copied struct {
	Cluster string
	Term    int64
	Applied ltx.TXID
}

// ErrNotFollowing is CopyFollowed's answer for a data directory that holds
// no follower's copy.
var ErrNotFollowing = errors.New("not a cluster follower's copy")

// CopyFollowed copies the follower's copy in dataDir to dest, whole and
// consistent, while its node may be applying what the leader ships. It
// reads as a SQLite reader does, under a read lock on the shared range,
// which Litestream's follow mode waits for before it writes a
// transaction's pages: the copy holds whole transactions. It never opens
// the copy with SQLite, which could make a WAL beside it that the node's
// Litestream does not know. A copy still being restored (none yet) is an
// error.
func CopyFollowed(dataDir, dest string) (Copied, error) {
	dbPath := filepath.Join(dataDir, database.DataFile)
	m, err := readMark(dbPath)
	if err != nil {
		return Copied{}, err
	}
	if m == nil {
		return Copied{}, ErrNotFollowing
	}
	src, err := os.Open(dbPath)
	if errors.Is(err, os.ErrNotExist) {
		return Copied{}, fmt.Errorf("the follower holds no copy yet (it is restoring the replica): try again once its /readyz says it follows")
	} else if err != nil {
		return Copied{}, err
	}
	defer src.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Copied{}, err
	}
	var applied ltx.TXID
	err = readLocked(src, func() error {
		var err error
		if applied, err = litestream.ReadTXIDFile(dbPath); err != nil {
			return err
		}
		_, err = io.Copy(out, src)
		return err
	})
	if err = errors.Join(err, out.Sync(), out.Close()); err != nil {
		os.Remove(dest)
		return Copied{}, fmt.Errorf("copy the follower's copy %s: %w", dbPath, err)
	}
	return Copied{Cluster: m.Cluster, Term: m.Term, Applied: applied}, nil
}
