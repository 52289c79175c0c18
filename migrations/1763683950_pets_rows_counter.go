package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The counter of the pets' existing rows, "pets.rows": their updates,
// deletions and the inserts that replace one (changeTriggers), not a new
// pet's insert. The pets kept by id, which keep no absent pet, outlive a
// create.
func init() {
	m.Register(func(app core.App) error {
		statements := []string{"INSERT INTO _petstore_changes (tbl) VALUES ('pets.rows')"}
		for _, t := range changeTriggers("pets.rows") {
			statements = append(statements, t[1])
		}
		return execAll(app, statements)
	}, func(app core.App) error {
		var statements []string
		for _, t := range changeTriggers("pets.rows") {
			statements = append(statements, "DROP TRIGGER IF EXISTS "+t[0])
		}
		return execAll(app, append(statements, "DELETE FROM _petstore_changes WHERE tbl = 'pets.rows'"))
	})
}
