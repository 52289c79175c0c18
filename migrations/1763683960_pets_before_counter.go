package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// The counter of the pets before the last id, "pets.before": their updates,
// deletions and the inserts of an id below the largest (changeTriggers), not
// a pet appended after all others. The pages of listPets that have a page
// after them outlive a create.
func init() {
	m.Register(func(app core.App) error {
		statements := []string{"INSERT INTO _petstore_changes (tbl) VALUES ('pets.before')"}
		for _, t := range changeTriggers("pets.before") {
			statements = append(statements, t[1])
		}
		return execAll(app, statements)
	}, func(app core.App) error {
		var statements []string
		for _, t := range changeTriggers("pets.before") {
			statements = append(statements, "DROP TRIGGER IF EXISTS "+t[0])
		}
		return execAll(app, append(statements, "DELETE FROM _petstore_changes WHERE tbl = 'pets.before'"))
	})
}
