package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// UseFile is the file in the data directory that every petstore process
// with the directory open holds a shared lock on, for as long as it has it
// open (serve, and each command that bootstraps), and that an offline
// restore locks exclusively: a restore never replaces the databases under
// a process that has them open.
const UseFile = ".petstore-in-use.lock"

// Use is a lock on UseFile, held.
type Use struct{ f *os.File }

// ErrInUse is TakeOver's error when a process has the data directory open.
var ErrInUse = errors.New("a petstore process has the data directory open")

// Enter takes a shared lock on dataDir's UseFile, waiting at most timeout
// while an offline restore holds it exclusively.
func Enter(dataDir string, timeout time.Duration) (*Use, error) {
	f, err := openUseFile(dataDir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		ok, err := tryLockShared(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if ok {
			return &Use{f: f}, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("gave up after %s waiting for %s: a petstore backup restore holds it while it replaces the data; "+
				"wait for it to finish, or raise --lock-timeout (PETSTORE_LOCK_TIMEOUT)", timeout, f.Name())
		}
		time.Sleep(lockPoll)
	}
}

// TakeOver takes dataDir's UseFile exclusively, without waiting: it fails
// with ErrInUse while any process holds it shared.
func TakeOver(dataDir string) (*Use, error) {
	f, err := openUseFile(dataDir)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if !ok {
		f.Close()
		return nil, ErrInUse
	}
	return &Use{f: f}, nil
}

// Exclusive makes the held shared lock exclusive, without waiting: it
// fails with ErrInUse, the lock shared again, while another process holds
// it. Neither flock nor LockFileEx converts a lock in place, so the shared
// lock is given up first; another process that takes the directory in
// between makes Exclusive fail, as it would have a moment later.
func (u *Use) Exclusive() error {
	if err := unlock(u.f); err != nil {
		return err
	}
	ok, err := tryLock(u.f)
	if ok {
		return nil
	}
	if shared := u.Shared(); shared != nil {
		return errors.Join(err, shared)
	}
	if err != nil {
		return err
	}
	return ErrInUse
}

// Shared makes the held lock shared again (after Exclusive), without
// waiting.
func (u *Use) Shared() error {
	if err := unlock(u.f); err != nil {
		return err
	}
	ok, err := tryLockShared(u.f)
	if err == nil && !ok {
		err = fmt.Errorf("%s is held exclusively by another process (a petstore backup restore)", u.f.Name())
	}
	return err
}

// Release gives the lock up; a nil Use or a second call does nothing.
func (u *Use) Release() error {
	if u == nil || u.f == nil {
		return nil
	}
	err := u.f.Close() // closing the descriptor drops its lock
	u.f = nil
	return err
}

func openUseFile(dataDir string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, DirMode); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dataDir, UseFile), os.O_RDWR|os.O_CREATE, FileMode)
}
