package dataversion

// Reads is how many reads of the database w has begun.
func Reads(w *Watch) uint64 { return w.begun.Load() }

// HeaderMapped reports whether w reads the WAL index header.
func HeaderMapped(w *Watch) bool { return w.walIndex != nil }
