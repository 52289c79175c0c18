package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/requestlog"
	"petstore/internal/tracing"
)

// Observer receives /v1's figures (package metrics implements it). Every
// value it gets is bounded: a route pattern, a standard method, a status, a
// plan's name, an outcome.
type Observer interface {
	// traceID, when not "", is the request's trace: the exemplar of its
	// latency.
	ObserveRequest(method, route string, status int, took time.Duration, traceID string)
	ObserveRateLimit(plan, outcome string)
	// ObservePlanRequest counts a key's request, answered, by its plan and
	// its outcome as its usage history counts it (served, refused,
	// limited, failed).
	ObservePlanRequest(plan, outcome string)
	// ObserveIdempotency counts a create with an Idempotency-Key by what
	// became of it: stored, replayed or conflict.
	ObserveIdempotency(outcome string)
}

// Outcomes of the rate limiter, and the plan of requests without a valid key.
const (
	outcomeAdmitted = "admitted"
	outcomeLimited  = "limited"
	outcomeBanned   = "banned"
	planAnonymous   = "anonymous"
)

// Outcomes of a create with an Idempotency-Key.
const (
	idempotencyStored   = "stored"
	idempotencyReplayed = "replayed"
	idempotencyConflict = "conflict"
)

// The label values an Observer gets whatever the traffic, so that it can
// show each series at 0 from the start: a counter that appears at its first
// event hides that event from rate() and increase().
var (
	RateLimitOutcomes   = []string{outcomeAdmitted, outcomeLimited, outcomeBanned}
	IdempotencyOutcomes = []string{idempotencyStored, idempotencyReplayed, idempotencyConflict}
	// AnonymousPlan is the plan of requests without a valid key; the
	// others are the plans staff keep.
	AnonymousPlan = planAnonymous
)

// observeRequestsID is the id of /v1's observer and of the site's, which
// the group's replaces.
const observeRequestsID = "petstoreObserveRequests"

// routeOther is the route of every path that matches no /v1 route.
const routeOther = "other"

// observeRequests hands every /v1 answer to o, whatever produced it: the
// handlers, the limiter's 429s, the key's 401s, the catch-all's 404s, the
// body limit's 413s. It runs first, so it times all the others.
func observeRequests(o Observer) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       observeRequestsID,
		Priority: observeRequestsPriority,
		Func: func(e *core.RequestEvent) error {
			started := time.Now()
			err := e.Next()
			o.ObserveRequest(methodLabel(e.Request.Method), routeLabel(e.Request.Pattern), e.Status(), time.Since(started), tracing.ID(e.Request.Context()))
			return err
		},
	}
}

// routeLabel is the /v1 route of a ServeMux pattern ("GET /v1/pets/{petId}").
func routeLabel(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	switch pattern {
	case "/v1/pets", "/v1/pets/{petId}", "/v1/categories", "/v1/usage", "/v1/openapi.json", "/v1/openapi.yaml":
		return pattern
	}
	return routeOther
}

// methodLabel is method when it is a standard one, else _OTHER, as
// OpenTelemetry names them: a client cannot make up label values.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// realtimeRoute is PocketBase's realtime stream, whose one request lasts
// as long as its client stays connected: its duration is no latency.
const realtimeRoute = "/api/realtime"

// ObserveSite hands o every answer outside /v1 (PocketBase's API under
// /api/, the dashboard, the pages, the health checks), under its own route:
// the path of the pattern that served it (/api/collections/{collection}/records,
// /api/backups, /_/{path...}), a label bounded by the routes registered,
// never a client's path. Bound on the router, it has observeRequests' id,
// which replaces it in the /v1 group; the realtime stream is left out.
func ObserveSite(o Observer) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       observeRequestsID,
		Priority: observeRequestsPriority,
		Func: func(e *core.RequestEvent) error {
			started := time.Now()
			err := e.Next()
			route := siteRouteLabel(e.Request.Pattern)
			if route == realtimeRoute {
				return err
			}
			// PocketBase's error handler writes an error after the chain
			// returns: StatusOf is the status it will send.
			o.ObserveRequest(methodLabel(e.Request.Method), route, requestlog.StatusOf(e, err), time.Since(started), tracing.ID(e.Request.Context()))
			return err
		},
	}
}

// siteRouteLabel is the path of a ServeMux pattern ("GET /api/health"),
// or routeOther without one.
func siteRouteLabel(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "" {
		return routeOther
	}
	return pattern
}
