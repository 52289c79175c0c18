package api

import (
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/dataversion"
)

// eventKeyDataVersion holds the data version the request works at.
const eventKeyDataVersion = "petstoreDataVersion"

// dataVersion is the data version the request works at (package
// dataversion): read once, when it first needs one (identifyKey, for its
// key), and the same for everything else it looks up (its pets), so that it
// sees one state of the database and pays for one read.
func dataVersion(e *core.RequestEvent, w *dataversion.Watch) (dataversion.Version, error) {
	if v, ok := e.Get(eventKeyDataVersion).(dataversion.Version); ok {
		return v, nil
	}
	v, err := w.Version()
	if err != nil {
		return dataversion.Version{}, err
	}
	e.Set(eventKeyDataVersion, v)
	return v, nil
}
