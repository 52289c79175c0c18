package replica

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/benbjohnson/litestream"
)

// ledMark is written beside a leader's database (<db>-led) when it starts
// shipping a term: when the node follows again, the database is compared
// with that term's replica (shippedWhole), and set aside only if the
// replica lacks some of it.
type ledMark struct {
	Cluster string `json:"cluster"`
	Term    int64  `json:"term"`
}

func ledPath(dbPath string) string { return dbPath + "-led" }

func writeLedMark(dbPath string, m ledMark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := ledPath(dbPath) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, ledPath(dbPath))
}

// shippedWhole says whether the database at dbPath, a leader's of cluster
// (its led mark), is byte for byte what its term's replica restores:
// every transaction it committed was shipped, and it holds nothing to
// keep. It folds the database's WAL into it first. No mark, or another
// cluster's, is no: the database is not known to be shipped anywhere.
func shippedWhole(ctx context.Context, root Root, cluster, dbPath string, log *slog.Logger) (whole bool, term int64, err error) {
	b, err := os.ReadFile(ledPath(dbPath))
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	} else if err != nil {
		return false, 0, err
	}
	var m ledMark
	if err := json.Unmarshal(b, &m); err != nil || m.Cluster != cluster || m.Term == 0 {
		return false, 0, nil
	}
	src, err := newSource(root, cluster, m.Term, log)
	if err != nil {
		return false, m.Term, err
	}
	restored := dbPath + ".shipped"
	defer removeCopy(restored)
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = restored
	if err := src.replica.Restore(ctx, opt); errors.Is(err, litestream.ErrNoSnapshots) {
		return false, m.Term, nil // the term shipped nothing
	} else if err != nil {
		return false, m.Term, fmt.Errorf("restore term %d's replica: %w", m.Term, err)
	}
	if err := checkpoint(dbPath); err != nil {
		return false, m.Term, err
	}
	at, err := firstDifference(dbPath, restored)
	if err == nil && at >= 0 {
		log.Info("The database differs from its term's replica", "its_term", m.Term, "at_byte", at)
	}
	return err == nil && at < 0, m.Term, err
}

// checkpoint folds the WAL of the database at path into it, and empties it.
func checkpoint(path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	var busy, frames, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if busy != 0 {
		return fmt.Errorf("checkpoint %s: another connection holds it", path)
	}
	return nil
}

// firstDifference is the offset of the first byte where the files at a
// and b differ (the shorter one's size when one is a prefix of the other),
// or -1 when they are the same. It reads both a block at a time.
func firstDifference(a, b string) (int64, error) {
	fa, err := os.Open(a)
	if err != nil {
		return 0, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return 0, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for offset := int64(0); ; {
		na, errA := io.ReadFull(fa, ba)
		nb, errB := io.ReadFull(fb, bb)
		for _, err := range []error{errA, errB} {
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				return 0, err
			}
		}
		n := min(na, nb)
		if i := mismatch(ba[:n], bb[:n]); i >= 0 {
			return offset + int64(i), nil
		}
		if na != nb {
			return offset + int64(n), nil
		}
		if na < len(ba) {
			return -1, nil
		}
		offset += int64(n)
	}
}

// mismatch is the index of the first byte where x and y, of one length,
// differ, or -1.
func mismatch(x, y []byte) int {
	if bytes.Equal(x, y) {
		return -1
	}
	for i := range x {
		if x[i] != y[i] {
			return i
		}
	}
	return -1
}
