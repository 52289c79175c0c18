package api

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

const getPetReplacement = "getPet was removed on 5 December 2030: use listPets (GET /v1/pets) with its status filter instead."

// deprecated marks every response of a route, errors included, with the
// Deprecation (RFC 9745), Sunset (RFC 8594) and successor Link headers;
// successor is the address of the replacement.
func deprecated(at, sunset time.Time, successor string) *hook.Handler[*core.RequestEvent] {
	deprecation := "@" + strconv.FormatInt(at.Unix(), 10)
	sunsetDate := sunset.UTC().Format(http.TimeFormat)
	link := "<" + successor + `>; rel="successor-version"`
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreDeprecated",
		Priority: deprecatedPriority,
		Func: func(e *core.RequestEvent) error {
			h := e.Response.Header()
			h.Set("Deprecation", deprecation)
			h.Set("Sunset", sunsetDate)
			h.Add("Link", link)
			return e.Next()
		},
	}
}

// removedAfter answers 410 Gone from sunset on, with message naming the
// replacement: the route retires itself without a release on that day. now
// is the service's clock (Deps.Now).
func removedAfter(sunset time.Time, now func() time.Time, message string) *hook.Handler[*core.RequestEvent] {
	gone := newError(http.StatusGone, CodeGone, "%s", message)
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreSunset",
		Priority: removedAfterPriority,
		Func: func(e *core.RequestEvent) error {
			if !now().Before(sunset) {
				return gone
			}
			return e.Next()
		},
	}
}
