package api

import "github.com/pocketbase/pocketbase/apis"

// The priorities of every /v1 middleware, group and route alike, in the
// order they run (lower first; at equal priority, the group's run before the
// route's, each in the order bound). Each is placed against PocketBase's own
// (apis.Default*Priority), which run in the same chain:
//
//	-100001 the trusted proxy headers removed unless from --proxy-addresses
//	        (internal/proxytrust; bound only when proxies are named)
//	-100000 the request's id (internal/requestid)
//	-99999  the request's span (TraceRequests; router-wide, only while tracing is on)
//	-99999  PocketBase's www redirect
//	-2010 observeRequests         (replaces the site's, ObserveSite, bound on the router)
//	-2001 sentURL                 (catch-all route)
//	-2000 errorBody, outer layer
//	-1999 exposeHeaders, deprecated (getPet), stability (beta operations)
//	-1042 preflightHeaders, preflightAllows (known paths)
//	-1041   PocketBase's CORS (answers every OPTIONS)
//	-1040 requestLog              (replaces PocketBase's activity logger)
//	-1030   PocketBase's panic recovery
//	-1025 errorBody, inner layer
//	-1015   PocketBase's superuser IP whitelist
//	-1010   PocketBase's security headers
//	-1007 requireScope            (operations)
//	-1006 countUncounted
//	-1005 identifyKey
//	-1004 rateLimit
//	-1001   the throttle of PocketBase's auth routes (hooks; passes /v1 by)
//	-1000   PocketBase's rate limiter (off unless configured)
//	 -990 BodyLimit               (64 KiB; replaces PocketBase's 32 MB)
//	 -989   the fixed collections' truncate guard (hooks; passes /v1 by)
//	 -989   the dashboard search's rewrite (hiddenfields; passes /v1 by)
//	 -989   the backups' guard (backup; passes /v1 by)
//	    0 requireKey              (operations)
//	    1 removedAfter            (getPet)
//
// PocketBase's auth-token loader (-1020) and the limit of the site's guests
// (-1019, internal/guestlimit) are unbound from /v1.
// TestMiddlewareOrder sends requests through the real server and holds this
// list to the order the middlewares actually run in.
const (
	// Outside everything PocketBase does for a request: the errors of its
	// CORS and panic recovery get the Error body too.
	errorBodyOuterPriority = 2 * apis.DefaultRateLimitMiddlewarePriority
	// observeRequests times and counts every answer, the outer errorBody's
	// included.
	observeRequestsPriority = errorBodyOuterPriority - 10
	// sentURL restores the client's URL before anything reads it.
	sentURLPriority = errorBodyOuterPriority - 1
	// Headers on every answer, errors included: before anything can answer.
	exposeHeadersPriority = errorBodyOuterPriority + 1
	deprecatedPriority    = errorBodyOuterPriority + 1
	stabilityPriority     = errorBodyOuterPriority + 1
	// Just before PocketBase's CORS, which answers OPTIONS itself.
	preflightPriority = apis.DefaultCorsMiddlewarePriority - 1
	// Inside PocketBase's activity logger (the request log records the
	// status actually sent) and its panic recovery (whose 500 it shapes),
	// before anything of ours can fail.
	errorBodyInnerPriority = apis.DefaultPanicRecoverMiddlewarePriority + 5
	// After PocketBase's security headers, before the rate limit.
	identifyKeyPriority = apis.DefaultSecurityHeadersMiddlewarePriority + 5
	// countUncounted wraps identifyKey and everything after it: a request
	// refused before rateLimit counted it is counted against its network.
	countUncountedPriority = identifyKeyPriority - 1
	// requireScope only declares the route's scope: it runs before
	// rateLimit, which enforces it.
	requireScopePriority = identifyKeyPriority - 2
	// rateLimit needs the key, and counts a request before its body is read
	// (the body limit, apis.DefaultBodyLimitMiddlewarePriority).
	rateLimitPriority = identifyKeyPriority + 1
	// requireKey refuses after the request is counted and the body limit is
	// in place: a caller without a valid key is counted against its network.
	requireKeyPriority = 0
	// fence (cluster mode, router-wide) turns away every request on a node
	// that may not serve, inside PocketBase's panic recovery and before
	// anything reads the request.
	fencePriority = apis.DefaultPanicRecoverMiddlewarePriority + 1
	// removedAfter answers 410 after requireKey, and so after the rate
	// limit: a request to a removed operation is still counted, and a
	// caller without a valid key learns nothing more than on any other route.
	removedAfterPriority = requireKeyPriority + 1
)
