package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/strictinput"
	"petstore/internal/tracing"
)

// Retention is how long an answer is remembered.
const Retention = 24 * time.Hour

// Answer is what the service answered: status, body and Location (createPet
// answers with no other header of its own).
type Answer struct {
	Status   int
	Body     []byte
	Location string
}

// Outcome says where an Answer comes from.
type Outcome int

const (
	// Fresh: the request was carried out now and its answer remembered.
	Fresh Outcome = iota
	// Replayed: the same request was carried out before; this is its answer.
	Replayed
	// Reused: the key was used before with another request body; nothing
	// was carried out and there is no answer.
	Reused
)

// Do carries out a request once per (scope, key) and body: the first time
// it runs do and remembers its answer, in the transaction do writes in, so
// that the answer and what the request created are committed together or
// not at all. A later request with the same scope, key and body gets that
// answer back (Replayed); with another body, Reused. When app is a
// transaction's app (createPet's, which the pets writer shares between the
// creates that arrive together, each in a savepoint), Do runs in that
// transaction; otherwise in one of its own.
//
// Do's first statement claims the key. It takes SQLite's write lock, so a
// concurrent request with the same key in another process on the same
// database waits for the first one's commit and then replays its answer; in
// this process, the pets writer runs the creates one after the other, and
// the second finds the first's row. There is no "in progress" state to see,
// and nothing is left behind by a process that dies mid-request (SQLite
// rolls the transaction back).
//
// An error from do, or from SQLite, rolls back what the request wrote (Do's
// own transaction, or, in the caller's, its savepoint): nothing is
// remembered, and a retry carries the request out again.
//
// ctx carries the request's span, if any: Do is a span of it.
func Do(ctx context.Context, app core.App, scope, key string, body []byte, now time.Time, do func(tx core.App) (Answer, error)) (_ Answer, _ Outcome, err error) {
	_, span := tracing.Start(ctx, "idempotency.do")
	defer tracing.End(span, &err)
	hash, raw := bodyHash(body), sha256.Sum256(body)
	var (
		answer  Answer
		outcome Outcome
	)
	err = app.RunInTransaction(func(tx core.App) error {
		claimed, err := claim(tx, scope, key, hash[:], now)
		if err != nil {
			return err
		}
		if !claimed {
			var prevHash []byte
			if prevHash, answer, err = load(tx, scope, key); err != nil {
				return err
			}
			outcome = Replayed
			// An answer remembered by its body's bytes (before bodies were
			// compared as JSON) still replays to a retry of those bytes.
			if !bytes.Equal(prevHash, hash[:]) && !bytes.Equal(prevHash, raw[:]) {
				answer, outcome = Answer{}, Reused
			}
			return nil
		}
		if answer, err = do(tx); err != nil {
			return err
		}
		outcome = Fresh
		return complete(tx, scope, key, answer)
	})
	if err != nil {
		return Answer{}, 0, err
	}
	return answer, outcome, nil
}

// bodyHash is the hash a request body is remembered by. A JSON object is
// hashed as its members sorted by name, each value without white space, so
// that a retry that encodes the same object again (members in another
// order, other spacing) is the same request, as Stripe compares parameters;
// a nested object keeps its members' order. Anything else, a repeated
// member included, is hashed as its bytes.
func bodyHash(body []byte) [sha256.Size]byte {
	members, err := strictinput.ReadObject(body)
	if err != nil {
		return sha256.Sum256(body)
	}
	names := slices.Sorted(maps.Keys(members))
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		quoted, err := json.Marshal(name)
		if err != nil {
			return sha256.Sum256(body)
		}
		b.Write(quoted)
		b.WriteByte(':')
		if err := json.Compact(&b, members[name]); err != nil {
			return sha256.Sum256(body)
		}
	}
	b.WriteByte('}')
	return sha256.Sum256(b.Bytes())
}

// claim inserts the key's row, or takes over one that has expired but is
// not purged yet; false when the key has a live answer.
func claim(tx core.App, scope, key string, hash []byte, now time.Time) (bool, error) {
	res, err := tx.DB().NewQuery(`
		INSERT INTO idempotency_keys (api_key_id, idempotency_key, body_hash, created, status, body, location)
		VALUES ({:scope}, {:key}, {:hash}, {:now}, 0, x'', '')
		ON CONFLICT (api_key_id, idempotency_key) DO UPDATE
			SET body_hash = excluded.body_hash, created = excluded.created, status = 0, body = x'', location = ''
			WHERE created <= {:expired}`).
		Bind(dbx.Params{
			"scope": scope, "key": key, "hash": hash,
			"now": now.UnixMilli(), "expired": now.Add(-Retention).UnixMilli(),
		}).Execute()
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func load(tx core.App, scope, key string) (hash []byte, a Answer, err error) {
	var row struct {
		BodyHash []byte `db:"body_hash"`
		Status   int    `db:"status"`
		Body     []byte `db:"body"`
		Location string `db:"location"`
	}
	err = tx.DB().NewQuery(`
		SELECT body_hash, status, body, location FROM idempotency_keys
		WHERE api_key_id = {:scope} AND idempotency_key = {:key}`).
		Bind(dbx.Params{"scope": scope, "key": key}).One(&row)
	if errors.Is(err, sql.ErrNoRows) {
		err = errors.New("idempotency: a claimed key has no row") // the claim said it had one, in the same transaction
	}
	return row.BodyHash, Answer{Status: row.Status, Body: row.Body, Location: row.Location}, err
}

func complete(tx core.App, scope, key string, a Answer) error {
	_, err := tx.DB().NewQuery(`
		UPDATE idempotency_keys SET status = {:status}, body = {:body}, location = {:location}
		WHERE api_key_id = {:scope} AND idempotency_key = {:key}`).
		Bind(dbx.Params{"scope": scope, "key": key, "status": a.Status, "body": a.Body, "location": a.Location}).
		Execute()
	return err
}

// Purge deletes the answers that have expired at now.
func Purge(app core.App, now time.Time) (int64, error) {
	res, err := app.DB().NewQuery("DELETE FROM idempotency_keys WHERE created <= {:expired}").
		Bind(dbx.Params{"expired": now.Add(-Retention).UnixMilli()}).Execute()
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// purgeJobId names the purge in PocketBase's cron (dashboard: Settings, Crons).
const purgeJobId = "petstoreIdempotencyPurge"

// BindPurge purges expired answers every 10 minutes while the app serves.
// Expired answers are never replayed, purged or not: the purge only keeps
// the table small.
func BindPurge(app core.App, logger *slog.Logger) {
	app.Cron().MustAdd(purgeJobId, "*/10 * * * *", func() {
		if _, err := Purge(app, time.Now()); err != nil {
			logger.Error("Could not purge expired idempotency keys", "error", err)
		}
	})
}

// Count is how many Idempotency-Keys are remembered.
func Count(db *sql.DB) (n int64, err error) {
	err = db.QueryRow("SELECT COUNT(*) FROM idempotency_keys").Scan(&n)
	return n, err
}
