package apikeys

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
)

// Collection is the name of the collection that holds the keys.
const Collection = "api_keys"

// HashField is the api_keys field holding Hash(key), the only trace of a key.
const HashField = "key_hash"

// ErrInvalid means a key is unknown, revoked or expired. Callers do not learn
// which, so that a guesser learns nothing either.
var ErrInvalid = errors.New("invalid API key")

// ErrUnknownPlan is returned by Create for a plan that does not exist.
var ErrUnknownPlan = errors.New("unknown plan")

// NewKey describes a key to create.
type NewKey struct {
	Name      string
	Plan      string    // a plans.name
	PerMinute int       // 0: the plan's quota
	PerDay    int       // 0: the plan's quota
	Expires   time.Time // zero: never
}

// Create stores a new key and returns it with its record. The returned key is
// the only copy of it: only its hash is stored.
func Create(app core.App, nk NewKey) (string, *core.Record, error) {
	plan, err := app.FindFirstRecordByData("plans", "name", nk.Plan)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fmt.Errorf("%w %q", ErrUnknownPlan, nk.Plan)
	}
	if err != nil {
		return "", nil, err
	}
	collection, err := app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return "", nil, err
	}

	key := Generate()
	r := core.NewRecord(collection)
	r.Set("name", nk.Name)
	r.Set("plan", plan.Id)
	r.Set(HashField, Hash(key))
	r.Set("prefix", DisplayPrefix(key))
	if nk.PerMinute > 0 {
		r.Set("per_minute", nk.PerMinute)
	}
	if nk.PerDay > 0 {
		r.Set("per_day", nk.PerDay)
	}
	if !nk.Expires.IsZero() {
		r.Set("expires", nk.Expires)
	}
	if err := app.Save(r); err != nil {
		return "", nil, err
	}
	return key, r, nil
}

// Key is what a request needs of its API key: which key it is, its quota
// (its own overrides, else its plan's) and its ban.
type Key struct {
	ID          string
	PerMinute   int64
	PerDay      int64
	BanAfter    int64         // rejected requests within a minute that ban the key; 0: the per-minute quota
	BanFor      time.Duration // how long a ban lasts; 0: the plan bans nobody
	BannedUntil time.Time
	LastUsed    time.Time
}

// findKeySQL reads a key joined with its plan, by hash. It is one statement,
// prepared once (see Finder).
const findKeySQL = `SELECT k.id, k.revoked, k.expires, k.banned_until, k.last_used, k.per_minute, k.per_day,
	p.per_minute AS plan_per_minute, p.per_day AS plan_per_day, p.ban_after, p.ban_minutes
	FROM api_keys k JOIN plans p ON p.id = k.plan
	WHERE k.key_hash = :hash LIMIT 1`

// Finder finds keys by their hash with one statement, prepared once: SQLite
// parses it once per pooled connection instead of once per request.
//
// It caches nothing: every Find reads the database, with one indexed query,
// so a revocation, an expiry or a quota edit made in the dashboard, by the CLI
// (another process) or by another instance on the same data directory applies
// to the very next request. A prepared statement is only the query's compiled
// form; SQLite recompiles it by itself when the schema changes.
type Finder struct {
	stmt *sql.Stmt
}

// NewFinder prepares the lookup on db, the app's read pool
// (app.ConcurrentDB()). The statement lives as long as db.
func NewFinder(db *sql.DB) (*Finder, error) {
	stmt, err := db.Prepare(findKeySQL)
	if err != nil {
		return nil, fmt.Errorf("prepare the API key lookup: %w", err)
	}
	return &Finder{stmt: stmt}, nil
}

// Find returns a usable key: known, not revoked, not expired. The read takes
// no context: a one-row indexed read is not worth interrupting, and a
// cancellable context costs database/sql and the driver a goroutine each.
func (f *Finder) Find(key string) (*Key, error) {
	if !wellFormed(key) {
		return nil, ErrInvalid
	}
	var (
		k                                      Key
		revoked                                bool
		expires, bannedUntil, lastUsed         types.DateTime
		perMinute, perDay, planMinute, planDay int64
		banMinutes                             int64
	)
	// The lookup is by hash, so timing cannot reveal how much of a key matched.
	err := f.stmt.QueryRow(sql.Named("hash", Hash(key))).Scan(&k.ID, &revoked, &expires, &bannedUntil, &lastUsed,
		&perMinute, &perDay, &planMinute, &planDay, &k.BanAfter, &banMinutes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrInvalid
	}
	if err != nil {
		return nil, err
	}
	// A banned key is still a valid key: the rate limiter answers it.
	if revoked || (!expires.IsZero() && !expires.Time().After(time.Now())) {
		return nil, ErrInvalid
	}
	k.PerMinute = firstPositive(perMinute, planMinute)
	k.PerDay = firstPositive(perDay, planDay)
	k.BanFor = time.Duration(banMinutes) * time.Minute
	k.BannedUntil = bannedUntil.Time()
	k.LastUsed = lastUsed.Time()
	return &k, nil
}

func firstPositive(values ...int64) int64 {
	for _, v := range values {
		if v > 0 {
			return v
		}
	}
	return 0
}

// Key states, as `keys list` shows them.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
	StateExpired = "expired"
	StateBanned  = "banned"
)

// State tells whether a key is usable at now.
func State(r *core.Record, now time.Time) string {
	switch {
	case r.GetBool("revoked"):
		return StateRevoked
	case !r.GetDateTime("expires").IsZero() && !r.GetDateTime("expires").Time().After(now):
		return StateExpired
	case r.GetDateTime("banned_until").Time().After(now):
		return StateBanned
	}
	return StateActive
}

// lastUsedResolution keeps last_used writes to one per key per minute.
const lastUsedResolution = time.Minute

// LastUsedStale reports whether k's last_used is old enough to be rewritten:
// once a minute per key is enough to tell staff which keys are in use.
func (k *Key) LastUsedStale(now time.Time) bool {
	return now.Sub(k.LastUsed) >= lastUsedResolution
}

// TouchLastUsed records that the key with the given record id was used at now.
func TouchLastUsed(app core.App, id string, now time.Time) error {
	return setColumns(app, id, dbx.Params{"last_used": dateString(now)})
}

// SaveBan bans the key with the given record id until until.
func SaveBan(app core.App, id string, until time.Time) error {
	return setColumns(app, id, dbx.Params{"banned_until": dateString(until)})
}

// DayCount is a key's count in its current day window.
type DayCount struct {
	ID     string         `db:"id"`
	Used   int64          `db:"day_used"`
	Resets types.DateTime `db:"day_resets"` // zero when Used is 0
}

// SaveDayCount mirrors a key's day window on its record, for staff and for
// a restart.
func SaveDayCount(app core.App, c DayCount) error {
	return setColumns(app, c.ID, dbx.Params{"day_used": c.Used, "day_resets": c.Resets.String()})
}

// DayCounts returns the saved day counts that are not zero.
func DayCounts(app core.App) ([]DayCount, error) {
	var counts []DayCount
	err := app.DB().Select("id", "day_used", "day_resets").From(Collection).
		Where(dbx.NewExp("day_used > 0")).All(&counts)
	return counts, err
}

// setColumns writes columns of one key directly, not the whole record: it
// neither bumps `updated` nor runs record hooks, and a staff edit made since
// the record was read is not overwritten.
func setColumns(app core.App, id string, columns dbx.Params) error {
	_, err := app.DB().Update(Collection, columns, dbx.HashExp{"id": id}).Execute()
	return err
}

// dateString is t as PocketBase stores dates.
func dateString(t time.Time) string {
	d, _ := types.ParseDateTime(t) // a time.Time always parses
	return d.String()
}

// Revoke marks the key with the given record id as revoked.
func Revoke(app core.App, id string) error {
	r, err := app.FindRecordById(Collection, id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no API key with id %q", id)
	}
	if err != nil {
		return err
	}
	r.Set("revoked", true)
	return app.Save(r)
}

// List returns every key, newest first, with its plan expanded.
func List(app core.App) ([]*core.Record, error) {
	records, err := app.FindRecordsByFilter(Collection, "", "-created", 0, 0)
	if err != nil {
		return nil, err
	}
	for _, err := range app.ExpandRecords(records, []string{"plan"}, nil) {
		return nil, err
	}
	return records, nil
}
