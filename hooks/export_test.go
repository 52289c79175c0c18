package hooks

import "github.com/pocketbase/pocketbase/core"

// PetCreatesHeard reports whether the pets /v1 creates on app reach anybody:
// whether the service builds records for them and fires the after-create
// hooks.
func PetCreatesHeard(app core.App) (bool, error) {
	events, err := newPetEvents(app, app.Logger())
	if err != nil {
		return false, err
	}
	return events.heard(), nil
}
