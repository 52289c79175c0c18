package usage

import (
	"errors"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/fixedcollections"
)

// errCountsServiceOnly answers a write of the usage history or of the
// thresholds told of through the records API, superusers included.
var errCountsServiceOnly = errors.New("the usage counts are written by the service only, from the requests it serves: " +
	"read them in usage_rollups or export them on the staff page (/staff/); --usage-retention purges them")

// collections are the usage's collections: the counts and the thresholds
// told of.
var collections = []string{Collection, ThresholdsCollection}

// Fixed is the usage's collections as fixed: the flush, the reads and the
// thresholds rely on their fields and indexes, and a rename would escape
// the record hooks of Bind.
func Fixed() []fixedcollections.Collection {
	fixed := make([]fixedcollections.Collection, len(collections))
	for i, c := range collections {
		fixed[i] = fixedcollections.Collection{Name: c, Refusal: "the usage collections cannot be renamed, changed, emptied or deleted: " +
			"their counts are the service's; --usage-retention purges them"}
	}
	return fixed
}

// Bind keeps every write of the usage's collections out of the records API
// and the dashboard, superusers included: a count changed by hand would
// break the sum of what was served, and the day windows started from it
// after a restart. The service writes them by SQL statements (the flush,
// the purge, the thresholds), and a key's deletion cascades to its rows;
// no request hook sees either.
func Bind(app core.App) {
	refuse := func(e *core.RecordRequestEvent) error { return e.ForbiddenError(errCountsServiceOnly.Error(), nil) }
	for _, c := range collections {
		app.OnRecordCreateRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
		app.OnRecordUpdateRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
		app.OnRecordDeleteRequest(fixedcollections.Tags(c)...).BindFunc(refuse)
	}
}
