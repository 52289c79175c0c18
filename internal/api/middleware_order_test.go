package api_test

import (
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

type (
	pbRouter = router.Router[*core.RequestEvent]
	pbGroup  = router.RouterGroup[*core.RequestEvent]
	pbRoute  = router.Route[*core.RequestEvent]
)

// probeHeader marks the requests whose middlewares are recorded.
const probeHeader = "X-Middleware-Probe"

// middlewareTrace records, for probe requests, each middleware as it runs:
// "global:" for PocketBase's router-wide ones, "v1:" for the /v1 group's,
// "route:" for the route's, then the handler's Id.
type middlewareTrace struct {
	mu  sync.Mutex
	ran []string
}

func (tr *middlewareTrace) wrap(scope string, handlers []*hook.Handler[*core.RequestEvent]) {
	for _, h := range handlers {
		label, run := scope+":"+h.Id, h.Func
		h.Func = func(e *core.RequestEvent) error {
			if e.Request.Header.Get(probeHeader) != "" {
				tr.mu.Lock()
				tr.ran = append(tr.ran, label)
				tr.mu.Unlock()
			}
			return run(e)
		}
	}
}

func (tr *middlewareTrace) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ran := tr.ran
	tr.ran = nil
	return ran
}

// children reads a router group's private list of routes and subgroups:
// PocketBase offers no way to reach a route once bound. The test fails
// here, not silently, if an upgrade renames it (docs/architecture.md,
// "PocketBase internals we depend on").
func children(t *testing.T, g *pbGroup) []any {
	t.Helper()
	f := reflect.ValueOf(g).Elem().FieldByName("children")
	if !f.IsValid() || f.Kind() != reflect.Slice {
		t.Fatalf("router.RouterGroup has no children slice: PocketBase's router changed")
	}
	var out []any
	for i := range f.Len() {
		c := f.Index(i).Elem() // a *RouterGroup or a *Route, read-only through reflect
		switch c.Type() {
		case reflect.TypeFor[*pbGroup]():
			out = append(out, (*pbGroup)(c.UnsafePointer()))
		case reflect.TypeFor[*pbRoute]():
			out = append(out, (*pbRoute)(c.UnsafePointer()))
		default:
			t.Fatalf("router group child of type %v", c.Type())
		}
	}
	return out
}

// TestMiddlewareOrder binds the /v1 group as serve does, on the real server,
// and holds the order its middlewares actually run in, PocketBase's among
// them, to the one documented in middleware_order.go.
func TestMiddlewareOrder(t *testing.T) {
	trace := &middlewareTrace{}
	s := apptest.StartWith(t, apptest.Config{
		MetricsAddr: "127.0.0.1:0",
		Router: func(r *pbRouter) {
			trace.wrap("global", r.Middlewares)
			var v1 *pbGroup
			for _, c := range children(t, r.RouterGroup) {
				if g, ok := c.(*pbGroup); ok && g.Prefix == "/v1" {
					v1 = g
				}
			}
			if v1 == nil {
				t.Fatal("no /v1 group")
			}
			trace.wrap("v1", v1.Middlewares)
			for _, c := range children(t, v1) {
				if route, ok := c.(*pbRoute); ok {
					trace.wrap("route", route.Middlewares)
				}
			}
		},
	})
	key := s.NewKey(t, apikeys.NewKey{Plan: "free"})

	// Every group middleware, in order, with PocketBase's around them.
	outer := []string{
		"global:petstoreRequestID",
		"global:" + apis.DefaultWWWRedirectMiddlewareId,
		"v1:petstoreObserveRequests",
		"v1:petstoreErrorBodyOuter",
		"v1:petstoreExposeHeaders",
	}
	inner := []string{
		"global:" + apis.DefaultCorsMiddlewareId,
		"v1:" + apis.DefaultActivityLoggerMiddlewareId, // the request log, in its place
		"global:" + apis.DefaultPanicRecoverMiddlewareId,
		"v1:petstoreErrorBodyInner",
		"global:" + apis.DefaultSuperuserIPsWhitelistMiddlewareId,
		"global:" + apis.DefaultSecurityHeadersMiddlewareId,
	}
	limit := []string{
		"v1:petstoreCountUncounted",
		"v1:petstoreIdentifyKey",
		"v1:petstoreRateLimit",
		"global:petstoreAuthThrottle",
		"global:" + apis.DefaultRateLimitMiddlewareId,
		"v1:" + apis.DefaultBodyLimitMiddlewareId, // 64 KiB, in place of PocketBase's 32 MB
		"global:petstoreTruncateGuard",
		"global:petstoreDashboardSearch",
		"global:petstoreBackupsGuard",
	}
	join := func(parts ...[]string) []string { return slices.Concat(parts...) }

	for _, c := range []struct {
		name, method, path string
		want               []string
	}{
		{"getPet", http.MethodGet, "/v1/pets/123456789012345", join(outer,
			[]string{"route:petstoreDeprecated", "v1:petstorePreflightHeaders"}, inner,
			[]string{"route:petstoreRequireScope"}, limit,
			[]string{"route:petstoreRequireKey", "route:petstoreSunset"})},
		{"listPets", http.MethodGet, "/v1/pets", join(outer,
			[]string{"v1:petstorePreflightHeaders"}, inner,
			[]string{"route:petstoreRequireScope"}, limit,
			[]string{"route:petstoreRequireKey"})},
		{"listCategories", http.MethodGet, "/v1/categories", join(outer,
			[]string{"route:petstoreStability", "v1:petstorePreflightHeaders"}, inner,
			[]string{"route:petstoreRequireScope"}, limit,
			[]string{"route:petstoreRequireKey"})},
		{"getUsage", http.MethodGet, "/v1/usage", join(outer,
			[]string{"route:petstoreStability", "v1:petstorePreflightHeaders"}, inner,
			[]string{"route:petstoreRequireScope"}, limit,
			[]string{"route:petstoreRequireKey"})},
		{"unknown path", http.MethodGet, "/v1/nothing", join(
			[]string{"global:petstoreRequestID", "global:" + apis.DefaultWWWRedirectMiddlewareId, "v1:petstoreObserveRequests", "route:petstoreSentURL", "v1:petstoreErrorBodyOuter", "v1:petstoreExposeHeaders",
				"v1:petstorePreflightHeaders", "route:petstorePreflightAllows"}, inner, limit)},
		// PocketBase's CORS answers every OPTIONS itself: the preflight
		// middlewares run just before it.
		{"preflight", http.MethodOptions, "/v1/pets", join(outer,
			[]string{"v1:petstorePreflightHeaders", "route:petstorePreflightAllows", "global:" + apis.DefaultCorsMiddlewareId})},
	} {
		t.Run(c.name, func(t *testing.T) {
			trace.take()
			r := s.Do(t, c.method, c.path, key, nil, probeHeader, "1", "Origin", "https://shop.test",
				"Access-Control-Request-Method", "GET")
			got := trace.take()
			if !slices.Equal(got, c.want) {
				t.Errorf("%s %s (status %d) ran\n  %q\nwant\n  %q", c.method, c.path, r.StatusCode, got, c.want)
			}
		})
	}
}
