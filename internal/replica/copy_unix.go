//go:build unix

package replica

import (
	"errors"
	"os"
	"syscall"
)

// readLocked runs read while this process holds a read lock on f's shared
// range, waiting for a writer's lock to go.
func readLocked(f *os.File, read func() error) error {
	lock := syscall.Flock_t{Type: syscall.F_RDLCK, Start: sqliteSharedFirst, Len: sqliteSharedSize}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lock); err != nil {
		return err
	}
	err := read()
	lock.Type = syscall.F_UNLCK
	return errors.Join(err, syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lock))
}
