//go:build !linux

package connlimit

import "errors"

// RaiseDescriptorLimit raises nothing outside Linux: on macOS the Go
// runtime raises the limit as far as the system allows, and Windows has no
// such limit.
func RaiseDescriptorLimit() (soft, hard uint64, err error) {
	return 0, 0, errors.ErrUnsupported
}
