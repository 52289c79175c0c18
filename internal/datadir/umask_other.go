//go:build !unix

package datadir

// RestrictUmask does nothing where there is no umask: Windows gives a new
// file its directory's access list.
func RestrictUmask() {}
