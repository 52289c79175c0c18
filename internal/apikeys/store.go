package apikeys

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/audit"
	"petstore/internal/dataversion"
	"petstore/internal/rollgrace"
	"petstore/internal/tracing"
)

// ErrInvalid means a key is unknown, revoked or expired. Callers do not learn
// which, so that a guesser learns nothing either.
var ErrInvalid = errors.New("invalid API key")

// NewKey describes a key to create.
type NewKey struct {
	Name      string    // required
	Plan      string    // a plans.name
	PerMinute int       // 0: the plan's quota
	PerDay    int       // 0: the plan's quota
	Expires   time.Time // zero: never
	Scopes    []Scope   // none: all of Scopes
}

// checkExpiry refuses an expiry that is not in the future (zero: never).
func checkExpiry(t, now time.Time) error {
	if !t.IsZero() && !t.After(now) {
		return badSettings(ExpiresField, "the expiry must be in the future")
	}
	return nil
}

// Create stores a new key and returns it with its record. The returned key is
// the only copy of it: only its hash is stored.
func Create(app core.App, nk NewKey, by audit.Actor) (string, *APIKey, error) {
	if err := checkExpiry(nk.Expires, time.Now()); err != nil {
		return "", nil, err
	}
	plan, err := FindPlan(app, nk.Plan)
	if err != nil {
		return "", nil, err
	}
	k, err := newAPIKey(app)
	if err != nil {
		return "", nil, err
	}

	key := Generate()
	k.SetName(nk.Name)
	k.SetPlanID(plan.Id)
	k.setSecret(key, time.Time{})
	k.SetPerMinute(int64(nk.PerMinute))
	k.SetPerDay(int64(nk.PerDay))
	k.setExpires(nk.Expires)
	scopes := nk.Scopes
	if len(scopes) == 0 {
		scopes = Scopes
	}
	k.setScopes(scopes)
	if err := CheckRecord(app, k); err != nil {
		return "", nil, err
	}
	err = app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(k); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.KeyCreated, Key: k.Id, By: by, Details: map[string]any{
			NameField: nk.Name, PlanField: nk.Plan, PerMinuteField: nk.PerMinute, PerDayField: nk.PerDay,
			ExpiresField: k.GetString(ExpiresField), ScopesField: ScopeNames(k.Scopes()),
		}})
	})
	if err != nil {
		return "", nil, err
	}
	return key, k, nil
}

// Key is what a request needs of its API key: which key it is, what it may
// do, its quota (its own overrides, else its plan's), whose windows it
// counts in, and its ban (its customer's, when it counts in the
// customer's windows).
type Key struct {
	ID     string
	Scopes []Scope // shared between the copies Find returns: never changed
	Plan   string  // the plan's name
	// Customer is the customer whose windows the key counts in, shared by
	// its keys, when its plan counts per customer and the key has no quota
	// of its own; "": the key counts in windows of its own.
	Customer    string
	PerMinute   int64
	PerDay      int64
	BanAfter    int64         // rejected requests within a minute that ban the key; 0: the per-minute quota
	BanFor      time.Duration // how long a ban lasts; 0: the plan bans nobody
	BannedUntil time.Time
	BanLifted   time.Time // when a ban was last lifted; zero: never
	LastUsed    time.Time
}

// Finder finds keys by their hash with one statement, prepared once: SQLite
// parses it once per pooled connection instead of once per request.
//
// It keeps what it read only while the keys and the plans do not change
// (package dataversion): any commit that changes either table, by any
// connection of any process, drops every kept key before the next Find;
// commits of other tables (the pets) keep them. So a revocation, an expiry or a quota edit
// made in the dashboard, by the CLI (another process) or by another instance
// on the same data directory applies to the very next request. What depends
// on the time and not on the database, expiry and a rolled key's grace
// period, is checked on every Find. Unknown keys are not kept: guessing
// cannot fill the cache. A prepared statement is only the query's compiled
// form; SQLite recompiles it by itself when the schema changes.
type Finder struct {
	stmt *sql.Stmt
	kept *dataversion.Cache[foundKey]
}

// foundKey is a row of findKeySQL.
type foundKey struct {
	key           Key
	revoked       bool
	expires       time.Time // zero: never
	byPrevious    bool      // found by the previous secret's hash, valid until previousUntil
	previousUntil time.Time
}

// maxKeptKeys bounds the keys kept (each about 200 bytes).
const maxKeptKeys = 10_000

// NewFinder prepares the lookup on db, the app's read pool
// (app.ConcurrentDB()). The statement lives as long as db.
func NewFinder(db *sql.DB) (*Finder, error) {
	stmt, err := db.Prepare(findKeySQL)
	if err != nil {
		return nil, fmt.Errorf("prepare the API key lookup: %w", err)
	}
	return &Finder{stmt: stmt, kept: dataversion.NewCache[foundKey](maxKeptKeys, Collection, PlansCollection)}, nil
}

// Find returns a usable key: known, not revoked, not expired, as of version,
// the data version the request read when it began (a dataversion.Watch on
// db's database). The read takes no context: a one-row indexed read is not
// worth interrupting, and a cancellable context costs database/sql and the
// driver a goroutine each. ctx carries the request's span, if any: the
// lookup is a span of it.
func (f *Finder) Find(ctx context.Context, version dataversion.Version, key string) (_ *Key, err error) {
	_, span := tracing.Start(ctx, "apikeys.find")
	defer tracing.End(span, &err, ErrInvalid)
	if !wellFormed(key) {
		return nil, ErrInvalid
	}
	// The lookup is by hash, so timing cannot reveal how much of a key matched.
	hash := Hash(key)
	now := time.Now()
	found, err := f.kept.Load(version, hash, func() (foundKey, error) { return f.read(hash, now) })
	// A rolled key's previous secret works until its grace period ends.
	if err == nil && found.byPrevious && !found.previousUntil.After(now) {
		found, err = f.read(hash, now)
	}
	if err != nil {
		return nil, err
	}
	// A banned key is still a valid key: the rate limiter answers it.
	if found.revoked || (!found.expires.IsZero() && !found.expires.After(now)) {
		return nil, ErrInvalid
	}
	k := found.key // a copy: the kept one is shared
	return &k, nil
}

func (f *Finder) read(hash string, now time.Time) (foundKey, error) {
	var (
		found                                  foundKey
		k                                      = &found.key
		expires, bannedUntil, banLifted        types.DateTime
		lastUsed, previousUntil                types.DateTime
		perMinute, perDay, planMinute, planDay int64
		banMinutes                             int64
		scopes                                 string
	)
	err := f.stmt.QueryRow(sql.Named("hash", hash), sql.Named("now", types.NowDateTime().String())).Scan(
		&k.ID, &found.revoked, &expires, &bannedUntil, &banLifted, &lastUsed,
		&perMinute, &perDay, &scopes, &k.Plan, &planMinute, &planDay, &k.BanAfter, &banMinutes,
		&found.byPrevious, &previousUntil, &k.Customer)
	if errors.Is(err, sql.ErrNoRows) {
		return found, ErrInvalid
	}
	if err != nil {
		return found, err
	}
	// A select field of several values is stored as a JSON array.
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return found, fmt.Errorf("the scopes of API key %s: %w", k.ID, err)
	}
	found.expires = expires.Time()
	found.previousUntil = previousUntil.Time()
	k.PerMinute = firstPositive(perMinute, planMinute)
	k.PerDay = firstPositive(perDay, planDay)
	k.BanFor = time.Duration(banMinutes) * time.Minute
	k.BannedUntil = bannedUntil.Time()
	k.BanLifted = banLifted.Time()
	k.LastUsed = lastUsed.Time()
	return found, nil
}

func firstPositive(values ...int64) int64 {
	for _, v := range values {
		if v > 0 {
			return v
		}
	}
	return 0
}

// Allows reports whether the key may do what s names.
func (k *Key) Allows(s Scope) bool { return slices.Contains(k.Scopes, s) }

// lastUsedResolution keeps last_used writes to one per key per minute.
const lastUsedResolution = time.Minute

// LastUsedStale reports whether k's last_used is old enough to be rewritten:
// once a minute per key is enough to tell staff which keys are in use.
func (k *Key) LastUsedStale(now time.Time) bool {
	return now.Sub(k.LastUsed) >= lastUsedResolution
}

// SaveBan bans the key with the given record id until until.
func SaveBan(app core.App, id string, until time.Time) error {
	return app.RunInTransaction(func(tx core.App) error {
		if err := setColumns(tx, id, dbx.Params{BannedUntilField: dateString(until)}); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.KeyBanned, Key: id, By: audit.System,
			Details: map[string]any{BannedUntilField: dateString(until)}})
	})
}

// setColumns writes columns of one key directly, not the whole record: it
// neither bumps `updated` nor runs record hooks, and a staff edit made since
// the record was read is not overwritten.
func setColumns(app core.App, id string, columns dbx.Params) error {
	_, err := app.DB().Update(Collection, columns, dbx.HashExp{"id": id}).Execute()
	return err
}

// Revoke marks the key with the given record id as revoked, for good.
func Revoke(app core.App, id string, by audit.Actor) error {
	_, err := Edit(app, id, by, func(k *APIKey) error {
		k.revoke()
		return nil
	})
	return err
}

// RevokeAgain revokes, with app, every key that the audit trail says was
// revoked and that is not, and returns their ids: after a backup restore,
// the keys revoked since the backup was made, or whose revocation a forged
// backup undid. Revocation is final, whatever a backup holds. The trail
// already holds each revocation, so no record is written.
func RevokeAgain(app core.App) ([]string, error) {
	var ids []string
	if err := app.DB().NewQuery(revokedAgainSQL).Bind(dbx.Params{"revoked": string(audit.KeyRevoked)}).Column(&ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	_, err := app.DB().Update(Collection, dbx.Params{RevokedField: RevokedValue}, dbx.In("id", anySlice(ids)...)).Execute()
	return ids, err
}

// anySlice is ids as []any, for dbx.In.
func anySlice(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// Roll gives the key with the given record id a new secret and returns it.
// Everything else stays: plan, quotas, counts, ban. The previous secret keeps
// working for grace (rollgrace's rule; none when 0); a roll during a grace period ends that
// period's secret at once, as only one previous secret is kept. A revoked or
// expired key is not rolled (ErrState): its new secret would not work.
func Roll(app core.App, id string, grace time.Duration, by audit.Actor) (string, *APIKey, error) {
	if err := rollgrace.Check(grace); err != nil {
		return "", nil, err
	}
	key := Generate()
	k, err := Edit(app, id, by, func(k *APIKey) error {
		now := time.Now()
		if k.Revoked() {
			return badState(RevokedField, "the key is revoked, so it cannot be rolled: issue a new key instead")
		}
		if k.Expired(now) {
			return badState(ExpiresField, "the key expired at %s, so it cannot be rolled: move its expiry first, or issue a new key",
				k.Expires().UTC().Format(time.RFC3339))
		}
		var previousUntil time.Time
		if grace > 0 {
			previousUntil = now.Add(grace)
		}
		k.setSecret(key, previousUntil)
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return key, k, nil
}

// Unban lifts the ban of the key with the given record id. It is the one way
// to lift a ban: it clears banned_until and sets ban_lifted, from which every
// instance's limiter, reading the key, learns to forget the rejections
// counted before the lift.
func Unban(app core.App, id string, by audit.Actor) error {
	_, err := Edit(app, id, by, func(k *APIKey) error {
		k.liftBan(time.Now())
		return nil
	})
	return err
}

// Changes are edits of a key's settings; nil fields stay as they are.
type Changes struct {
	Name      *string
	Plan      *string // a plans.name
	PerMinute *int    // 0: the plan's quota
	PerDay    *int    // 0: the plan's quota
	// Expires sets, moves or removes (the zero time: never expires) the
	// key's expiry, in the future. It is the one way to change an expiry,
	// and it may bring an expired key back; a revoked key keeps its own.
	Expires *time.Time
	// Scopes replaces what the key may do (at least one scope); the next
	// request with the key, on any instance, is held to them.
	Scopes *[]Scope
}

// Change applies c to the key with the given record id, in one transaction:
// all of it, or nothing when a part breaks a rule.
func Change(app core.App, id string, c Changes, by audit.Actor) (*APIKey, error) {
	if c.Expires != nil {
		if err := checkExpiry(*c.Expires, time.Now()); err != nil {
			return nil, err
		}
	}
	var plan *Plan
	if c.Plan != nil {
		var err error
		if plan, err = FindPlan(app, *c.Plan); err != nil {
			return nil, err
		}
	}
	return Edit(app, id, by, func(k *APIKey) error {
		if c.Name != nil {
			k.SetName(*c.Name)
		}
		if plan != nil {
			k.SetPlanID(plan.Id)
		}
		if c.PerMinute != nil {
			k.SetPerMinute(int64(*c.PerMinute))
		}
		if c.PerDay != nil {
			k.SetPerDay(int64(*c.PerDay))
		}
		if c.Expires != nil {
			if k.Revoked() {
				return badState(ExpiresField, "the key is revoked: its expiry no longer matters, and does not change")
			}
			k.setExpires(*c.Expires)
		}
		if c.Scopes != nil {
			k.setScopes(*c.Scopes)
		}
		return nil
	})
}

// Edit reads, edits and saves one key in a transaction (app's, when app is
// one), so that a ban or a count the limiter writes meanwhile is not
// overwritten with what was read, and writes the audit records of what
// changed in the same transaction.
func Edit(app core.App, id string, by audit.Actor, edit func(*APIKey) error) (*APIKey, error) {
	k := &APIKey{}
	err := app.RunInTransaction(func(tx core.App) error {
		// Take SQLite's write lock before reading (waiting for it as long as
		// busy_timeout allows): a transaction that reads first cannot write
		// once another process has written meanwhile (SQLITE_BUSY_SNAPSHOT).
		if _, err := tx.DB().Update(Collection, dbx.Params{"id": dbx.NewExp("id")}, dbx.HashExp{"id": id}).Execute(); err != nil {
			return err
		}
		r, err := tx.FindRecordById(Collection, id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w with id %q", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		k.Record = r
		before := k.Stored()
		if err := edit(k); err != nil {
			return err
		}
		if err := CheckRecord(tx, k); err != nil {
			return err
		}
		if err := tx.Save(k); err != nil {
			return err
		}
		return WriteAudit(tx, before, k, by)
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// Get returns the key with the given record id, with its plan expanded.
func Get(app core.App, id string) (*APIKey, error) {
	r, err := app.FindRecordById(Collection, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w with id %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	if errs := app.ExpandRecord(r, []string{PlanField}, nil); len(errs) > 0 {
		return nil, errs[PlanField]
	}
	return &APIKey{r}, nil
}

// CountByState counts the keys in each State at now, every state included.
func CountByState(db *sql.DB, now time.Time) (map[string]int64, error) {
	at, err := types.ParseDateTime(now)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(countByStateSQL, sql.Named("now", at.String()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int64{StateActive: 0, StateRevoked: 0, StateExpired: 0, StateBanned: 0}
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		counts[state] = n
	}
	return counts, rows.Err()
}
