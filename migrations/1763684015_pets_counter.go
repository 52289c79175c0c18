package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The counter of every change of the pets, "pets": each insert, update and
// deletion (changeTriggers). The last page of listPets changes with any of
// them, a pet appended after all others included, and nothing else: its
// ETag follows this counter, where it would otherwise follow every commit
// of the database (the usage history's every few seconds among them).
func init() {
	m.Register(func(app core.App) error {
		statements := []string{"INSERT INTO _petstore_changes (tbl) VALUES ('pets')"}
		for _, t := range changeTriggers("pets") {
			statements = append(statements, t[1])
		}
		return execAll(app, statements)
	}, func(app core.App) error {
		var statements []string
		for _, t := range changeTriggers("pets") {
			statements = append(statements, "DROP TRIGGER IF EXISTS "+t[0])
		}
		return execAll(app, append(statements, "DELETE FROM _petstore_changes WHERE tbl = 'pets'"))
	})
}
