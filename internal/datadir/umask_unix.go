//go:build unix

package datadir

import "syscall"

// RestrictUmask makes every file and directory the process creates from
// now on its owner's alone (umask 077), whatever umask it was started
// with: SQLite's databases, their -wal and -shm, backups and uploaded
// files included. The umask is the process's, so it also covers files that
// PocketBase and SQLite create without asking petstore.
func RestrictUmask() { syscall.Umask(0o077) }
