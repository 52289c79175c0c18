package database

import (
	"database/sql"
	"fmt"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// WriteDB is app's write connection as database/sql has it: statements
// prepared on it once run in each transaction (Tx.Stmt) without being
// parsed again.
func WriteDB(app core.App) (*sql.DB, error) {
	db, ok := app.NonconcurrentDB().(*dbx.DB)
	if !ok {
		return nil, fmt.Errorf("the app's write connection is a %T, not a *dbx.DB", app.NonconcurrentDB())
	}
	return db.DB(), nil
}

// SQLTx is the *sql.Tx of a transaction's app: dbx's builders (its SQLite
// one embeds BaseBuilder) hold it.
func SQLTx(txApp core.App) (*sql.Tx, error) {
	dbxTx, ok := txApp.NonconcurrentDB().(*dbx.Tx)
	if !ok {
		return nil, fmt.Errorf("a transaction's write connection is a %T", txApp.NonconcurrentDB())
	}
	b, _ := dbxTx.Builder.(interface{ Executor() dbx.Executor })
	if b == nil {
		return nil, fmt.Errorf("a transaction's builder is a %T, without its *sql.Tx", dbxTx.Builder)
	}
	sqlTx, ok := b.Executor().(*sql.Tx)
	if !ok {
		return nil, fmt.Errorf("a transaction's executor is a %T, not a *sql.Tx", b.Executor())
	}
	return sqlTx, nil
}
