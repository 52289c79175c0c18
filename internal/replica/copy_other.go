//go:build !unix

package replica

import (
	"errors"
	"os"
)

// readLocked refuses: this system has no POSIX locks to read a follower's
// copy under.
func readLocked(*os.File, func() error) error {
	return errors.New("copying a follower's copy needs POSIX file locks, which this system lacks")
}
