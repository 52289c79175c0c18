// Package api is petstore's /v1 HTTP layer: its routes and middleware, the
// Error catalogue, the one JSON writer, and the handlers of the spec's
// operations. It reads requests and writes answers; pets, API keys, limits
// and the rest are its callees.
package api

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/apikeys"
	"petstore/internal/categories"
	"petstore/internal/dataversion"
	"petstore/internal/limits"
	"petstore/internal/pets"
	"petstore/internal/requestlog"
	"petstore/internal/usage"
)

// maxBodyBytes bounds every /v1 request body (413 beyond).
const maxBodyBytes = 64 << 10

// Deps are what the /v1 routes work with.
type Deps struct {
	Limiter    *limits.Limiter
	Keys       *apikeys.Finder
	LastUse    *apikeys.LastUse   // writes each key's last use
	Version    *dataversion.Watch // the read pool's data version, at which keys and pets are kept
	Pets       *pets.Reads
	PetWriter  *pets.Writer
	Categories *categories.Reads
	RequestLog *requestlog.Logger
	Usage      *usage.Recorder
	Now        func() time.Time // the service's clock for dates it acts on (getPet's sunset)
	Base       BaseURL          // where clients reach /v1: Link and Location are under it
	Documents  Documents        // the OpenAPI document, naming Base
	Logger     *slog.Logger     // the service's log
	Metrics    Observer         // nil: no metrics
	// DayQuotaReached hears of each request after which a key's day window
	// admits no more (the webhooks' key.day_quota_reached); nil: none.
	DayQuotaReached func(keyID string, at time.Time)
	// Thresholds hears of every key's day window, to tell of 80 % and
	// 100 % of its quota (usage.threshold); nil: none.
	Thresholds *usage.Thresholds
}

// AddRoutes is the whole /v1 surface: every route with its middleware.
//
// Group middleware, in the order they run (their priorities are in
// middleware_order.go, with PocketBase's and the routes' between them;
// TestMiddlewareOrder holds that list to the order they actually run in):
//
//	observeRequests  with metrics: times and counts every answer by route and status
//	requestLog       PocketBase's request log, written cheaply: replaces its activity
//	                 logger for /v1, at its place, between the two errorBody layers
//	                 (package requestlog)
//	errorBody        every error becomes the spec's Error body (two layers, see errorBody)
//	exposeHeaders    browsers may read Link, Location, the rate-limit headers...
//	preflightHeaders OPTIONS get the rate-limit headers uncounted (PocketBase's CORS answers them)
//	countUncounted   a request failing before rateLimit is counted against its IP
//	identifyKey      resolves the bearer API key, if any
//	rateLimit        counts the request (per key, else per IP), sets the headers;
//	                 then 403 for a key without the route's scope (requireScope),
//	                 else 429; once the request is answered, records a key's
//	                 request in its usage history (operation, hour, outcome);
//	                 hands the key's day window to the usage thresholds
//	BodyLimit        64 KiB (replaces PocketBase's 32 MB for /v1)
//
// Each operation's route adds requireKey (401 without a valid API key, after
// rateLimit) and requireScope (the scope it needs, declared before rateLimit,
// which enforces it): authentication, then the scope, then the limit.
//
// PocketBase's auth-token loader is unbound: it would try API keys as
// PocketBase tokens.
func AddRoutes(v1 *router.RouterGroup[*core.RequestEvent], d Deps) {
	v1.Unbind(apis.DefaultLoadAuthTokenMiddlewareId)
	v1.Bind(d.RequestLog.Middleware(), errorBody(errorBodyOuterId, errorBodyOuterPriority), errorBody(errorBodyInnerId, errorBodyInnerPriority),
		exposeHeaders(), preflightHeaders(d.Limiter), countUncounted(d.Limiter), identifyKey(d.Keys, d.LastUse, d.Version), rateLimit(d.Limiter, d.Usage, d.Metrics, d.DayQuotaReached, d.Thresholds),
		apis.BodyLimit(maxBodyBytes))
	if d.Metrics != nil {
		v1.Bind(observeRequests(d.Metrics))
	}

	petsURL := d.Base.links() + "/pets"
	v1.GET("/pets", handleListPets(d.Pets, d.Version, petsURL)).Bind(requireKey(), requireScope(apikeys.ScopePetsRead))
	v1.POST("/pets", handleCreatePet(d.PetWriter, petsURL, d.Metrics)).Bind(requireKey(), requireScope(apikeys.ScopePetsWrite))
	v1.GET("/pets/{petId}", handleGetPet(d.Pets, d.Version)).Bind(requireKey(), requireScope(apikeys.ScopePetsRead),
		deprecated(getPetDeprecatedAt, getPetSunset, petsURL),
		removedAfter(getPetSunset, d.Now, getPetReplacement))
	v1.GET("/categories", handleListCategories(d.Categories, d.Version, d.Base.links()+"/categories")).Bind(requireKey(),
		requireScope(apikeys.ScopePetsRead), stability(stabilityBeta))
	v1.GET("/usage", handleGetUsage(d.Usage)).Bind(requireKey(), requireScope(apikeys.ScopePetsRead), stability(stabilityBeta))
	// The contract itself needs no API key.
	v1.GET("/openapi.json", d.Documents.JSON.Serve)
	v1.GET("/openapi.yaml", d.Documents.YAML.Serve)

	// Known paths with another method: 405 with Allow; a CORS preflight
	// allows the same methods. Anything else: 404, and a preflight allows
	// no method.
	knownPath(v1, "/pets", http.MethodGet, http.MethodHead, http.MethodPost)
	knownPath(v1, "/pets/{petId}", http.MethodGet, http.MethodHead)
	knownPath(v1, "/categories", http.MethodGet, http.MethodHead)
	knownPath(v1, "/usage", http.MethodGet, http.MethodHead)
	knownPath(v1, "/openapi.json", http.MethodGet, http.MethodHead)
	knownPath(v1, "/openapi.yaml", http.MethodGet, http.MethodHead)
	v1.Any("", notFound).Bind(preflightAllows(""))
	v1.Any("/{path...}", notFound).Bind(sentURL(), preflightAllows("")) // also paths refused before routing (uncleanPathGuard)
}

// operations are the document's operation ids by the pattern of their
// route: the usage history counts each key's requests by them
// (TestOperationsAreTheDocuments holds them to the document).
var operations = map[string]string{
	"GET /v1/pets":         "listPets",
	"POST /v1/pets":        "createPet",
	"GET /v1/pets/{petId}": "getPet",
	"GET /v1/categories":   "listCategories",
	"GET /v1/usage":        getUsageOperation,
	"GET /v1/openapi.json": "getOpenAPIDocument",
	"GET /v1/openapi.yaml": "getOpenAPIDocumentYAML",
}

// getUsageOperation is getUsage's id: its requests keep the rate limit's
// decision for its handler.
const getUsageOperation = "getUsage"

// operationOf is the operation id of the route pattern a request matched,
// or usage.OtherOperation.
func operationOf(pattern string) string {
	if id, ok := operations[pattern]; ok {
		return id
	}
	return usage.OtherOperation
}

// knownPath answers the methods of path other than allowed with 405 and
// Allow, and makes a CORS preflight for path allow exactly allowed.
func knownPath(v1 *router.RouterGroup[*core.RequestEvent], path string, allowed ...string) {
	allow := strings.Join(allowed, ", ")
	v1.Any(path, methodNotAllowed(allow)).Bind(preflightAllows(allow))
}

func methodNotAllowed(allow string) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		e.Response.Header().Set("Allow", allow)
		return newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"Method %s is not allowed here (allowed: %s).", e.Request.Method, allow)
	}
}

func notFound(e *core.RequestEvent) error {
	if isRefusedPath(e.Request.URL) {
		return newError(http.StatusNotFound, CodeNotFound,
			`No such resource: %s. Paths under /v1 with an empty, "." or ".." segment or an escaped "/" are never served.`,
			e.Request.URL.EscapedPath())
	}
	return newError(http.StatusNotFound, CodeNotFound, "No such resource: %s.", e.Request.URL.Path)
}
