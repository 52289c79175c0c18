package limits

import "time"

// Key is an API key as the limiter sees it: the caller reads it from wherever
// keys live, on every request, so that edits apply to the next one.
type Key struct {
	ID string
	// Customer, when set, is the customer whose windows the key counts in
	// (its plan counts per customer): every key of the customer that
	// counts so shares them, with their rejections and their ban. Empty:
	// the key counts in windows of its own.
	Customer    string
	Quota       Quota
	BannedUntil time.Time // non-zero: banned until then
	// BanLifted is when staff last lifted a ban of the key: the rejections
	// and the minute window counted before it are forgotten, once.
	BanLifted time.Time
}

// customerWindows starts the name of a customer's windows: a key's are
// named by its id alone, as they always were (instances of two versions
// share a Redis during an upgrade).
const customerWindows = "customer:"

// CustomerWindows is the name of the windows of the customer with the
// given id, as the Ledger's Served names them.
func CustomerWindows(id string) string { return customerWindows + id }

// windows is the name of the windows key counts in: its customer's, or its
// own (its id).
func (k Key) windows() string {
	if k.Customer != "" {
		return CustomerWindows(k.Customer)
	}
	return k.ID
}

// Quota is what one API key may do.
type Quota struct {
	PerMinute, PerDay int64
	// BanAfter rejected requests within one minute window ban the key for
	// BanFor; BanAfter 0 means PerMinute. Never fewer than MinBanAfter.
	// BanFor 0 disables bans.
	BanAfter int64
	BanFor   time.Duration
}

// MinBanAfter is the fewest rejected requests in a minute that ban a key,
// whatever its quota says: a client of a small quota that retries a few
// times to read Retry-After is no abuser.
const MinBanAfter = 10

func (q Quota) banAfter() int64 {
	n := q.BanAfter
	if n <= 0 {
		n = q.PerMinute
	}
	return max(n, MinBanAfter)
}
