package connlimit

import "syscall"

// RaiseDescriptorLimit raises the process's soft limit of open files to its
// hard limit, and returns both as they then are. Go's os package raises it
// at start on Linux too; doing it here makes the limit the bounds are
// derived from the one read, whatever the runtime does.
func RaiseDescriptorLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		raised := rl
		raised.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return rl.Cur, rl.Max, err
		}
		rl = raised
	}
	return rl.Cur, rl.Max, nil
}
