package hooks

import (
	"net/http"
	"strconv"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// Deprecation of getPet (spec, Versioning): announced with v1.0.0, removed on
// 5 December 2030, replaced by listPets with the status filter.
var (
	getPetDeprecatedAt = time.Date(2025, time.November, 20, 0, 0, 0, 0, time.UTC)
	getPetSunset       = time.Date(2030, time.December, 5, 0, 0, 0, 0, time.UTC)
)

const getPetSuccessor = "/v1/pets"

// deprecated marks every response of a route, errors included, with the
// Deprecation (RFC 9745), Sunset (RFC 8594) and successor Link headers.
func deprecated(at, sunset time.Time, successor string) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreDeprecated",
		Priority: errorBodyOuterPriority + 1, // before anything can answer
		Func: func(e *core.RequestEvent) error {
			h := e.Response.Header()
			h.Set("Deprecation", "@"+strconv.FormatInt(at.Unix(), 10))
			h.Set("Sunset", sunset.UTC().Format(http.TimeFormat))
			h.Add("Link", "<"+successor+`>; rel="successor-version"`)
			return e.Next()
		},
	}
}
