package limits

import "time"

// Ledger keeps what must outlive the limiter's counters: bans, and each key's
// day count, for staff and for the restart of an instance counting in memory.
// The caller implements it over its own records.
type Ledger interface {
	SaveBan(keyID string, until time.Time) error
	SaveDayCount(c DayCount) error
	// DayCounts returns the saved counts that are not zero.
	DayCounts() ([]DayCount, error)
}

// DayCount is a key's count in its current day window.
type DayCount struct {
	KeyID  string
	Used   int64
	Resets time.Time // zero when Used is 0
}
