//go:build unix

package datadir

import (
	"errors"
	"os"
	"syscall"
)

func tryLock(f *os.File) (bool, error) { return tryFlock(f, syscall.LOCK_EX) }

func tryLockShared(f *os.File) (bool, error) { return tryFlock(f, syscall.LOCK_SH) }

// tryFlock takes how (LOCK_EX or LOCK_SH) on f without waiting: false when
// another descriptor holds a lock that conflicts.
func tryFlock(f *os.File, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
