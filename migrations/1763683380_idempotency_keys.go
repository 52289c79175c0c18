package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The answers remembered for Idempotency-Key (package idempotency): a plain
// table, not a collection, because only the service reads and writes it, in
// the transaction that creates the pet. A row goes with its API key.
func init() {
	m.Register(func(app core.App) error {
		_, err := app.DB().NewQuery(`
			CREATE TABLE idempotency_keys (
				api_key_id      TEXT    NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
				idempotency_key TEXT    NOT NULL,
				body_hash       BLOB    NOT NULL,
				created         INTEGER NOT NULL,
				status          INTEGER NOT NULL,
				body            BLOB    NOT NULL,
				location        TEXT    NOT NULL,
				PRIMARY KEY (api_key_id, idempotency_key)
			) WITHOUT ROWID;
			CREATE INDEX idx_idempotency_keys_created ON idempotency_keys (created);
		`).Execute()
		return err
	}, func(app core.App) error {
		_, err := app.DB().NewQuery("DROP TABLE idempotency_keys").Execute()
		return err
	})
}
