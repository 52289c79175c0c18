package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LockFile is the file in the data directory that a starting process
// locks while it opens the databases and applies migrations. The lock is
// the operating system's (flock, LockFileEx): it goes with the process,
// however the process ends.
const LockFile = ".petstore-start.lock"

// Lock is the start lock, held.
type Lock struct{ f *os.File }

// lockPoll is how often a waiting process tries the lock again.
const lockPoll = 50 * time.Millisecond

// Acquire takes the start lock of dataDir, waiting at most timeout for the
// process that holds it. waiting, when the lock is taken, is called once
// with the holder's process id (as the holder wrote it; may be empty)
// before the wait begins.
func Acquire(dataDir string, timeout time.Duration, waiting func(holder string)) (*Lock, error) {
	path := filepath.Join(dataDir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for first := true; ; first = false {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			break
		}
		holder := readHolder(path)
		if first && waiting != nil {
			waiting(holder)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, &LockTimeoutError{Path: path, Holder: holder, Timeout: timeout}
		}
		time.Sleep(lockPoll)
	}
	// The holder's id, for the messages of those who wait.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release lets the next waiting process start.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := errors.Join(unlock(l.f), l.f.Close())
	l.f = nil
	return err
}

// LockTimeoutError is Acquire's error when the wait ran out.
type LockTimeoutError struct {
	Path    string
	Holder  string // the holding process's id, if it wrote one
	Timeout time.Duration
}

func (e *LockTimeoutError) Error() string {
	holder := "another petstore process"
	if e.Holder != "" {
		holder += " (pid " + e.Holder + ")"
	}
	return fmt.Sprintf("gave up after %s waiting for the start lock %s: %s holds it while it opens the data directory and applies migrations; "+
		"wait for it to finish or stop it, or raise --lock-timeout (PETSTORE_LOCK_TIMEOUT)", e.Timeout, e.Path, holder)
}

func readHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
