//go:build !linux

package dataversion

import "errors"

// walIndex is a view of a database's WAL index header, which only Linux
// maps here (it finds SQLite's descriptor in /proc): elsewhere every Version
// reads the database.
type walIndex struct{}

func openWALIndex(string) (*walIndex, error) { return nil, errors.ErrUnsupported }

func (*walIndex) stamp() walStamp { return walStamp{} }
