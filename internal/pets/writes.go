package pets

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
	"github.com/pocketbase/pocketbase/tools/types"
)

// Writes is createPet's INSERT, prepared once on PocketBase's write
// connection (app.NonconcurrentDB()): a plain row, as the record save would
// store it, without building a core.Record, running its validators and
// hooks or parsing the INSERT again for every pet. Its caller has checked
// the NewPet against the rules. Record hooks and realtime events do not fire
// for pets created this way (docs/api.md).
type Writes struct {
	insert *sql.Stmt
}

// The id does not exist yet with overwhelming odds (9·10^14 ids); when it
// does, ON CONFLICT leaves the row alone, no row is inserted and Create
// tries another id.
const insertSQL = "INSERT INTO pets (id, name, categoryId, status, created, updated)" +
	" VALUES (:id, :name, :categoryId, :status, :now, :now) ON CONFLICT (id) DO NOTHING"

// maxIDAttempts bounds the retries on an id collision.
const maxIDAttempts = 5

// PrepareWrites prepares the insert on app's write connection.
func PrepareWrites(app core.App) (*Writes, error) {
	db, ok := app.NonconcurrentDB().(*dbx.DB)
	if !ok {
		return nil, fmt.Errorf("the app's write connection is a %T, not a *dbx.DB", app.NonconcurrentDB())
	}
	stmt, err := db.DB().Prepare(insertSQL)
	if err != nil {
		return nil, fmt.Errorf("prepare the pets insert: %w", err)
	}
	return &Writes{insert: stmt}, nil
}

// Create inserts np as a new pet with app's write connection, or with its
// transaction when app is a transaction's app (idempotency.Do's).
func (w *Writes) Create(app core.App, np NewPet) (Pet, error) {
	insert := w.insert
	switch db := app.NonconcurrentDB().(type) {
	case *dbx.DB:
	case *dbx.Tx:
		// dbx's builders (its SQLite one embeds BaseBuilder) hold the *sql.Tx.
		b, _ := db.Builder.(interface{ Executor() dbx.Executor })
		tx, ok := b.Executor().(*sql.Tx)
		if b == nil || !ok {
			return Pet{}, fmt.Errorf("a transaction's builder is a %T, without its *sql.Tx", db.Builder)
		}
		insert = tx.Stmt(w.insert) // the same prepared statement: the write pool has one connection
		defer insert.Close()
	default:
		return Pet{}, fmt.Errorf("the app's write connection is a %T", db)
	}

	pet := Pet{Name: Name(np.Name), CategoryID: np.CategoryID, Status: NewStatus(np.Status)}
	// As the record save stores the autodate fields: the same instant, text.
	now := types.NowDateTime().String()
	for range maxIDAttempts {
		// As the collection's id field generates ids, from its pattern.
		id, err := security.RandomStringByRegex(IDPattern)
		if err != nil {
			return Pet{}, err
		}
		res, err := insert.Exec(sql.Named("id", id), sql.Named("name", pet.Name),
			sql.Named("categoryId", pet.CategoryID), sql.Named("status", pet.Status), sql.Named("now", now))
		if err != nil {
			return Pet{}, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			pet.ID, _ = strconv.ParseInt(id, 10, 64) // the pattern guarantees 15 digits
			return pet, err
		}
	}
	return Pet{}, errors.New("no free pet id after several attempts")
}
