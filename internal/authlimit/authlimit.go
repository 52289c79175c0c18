// Package authlimit applies PocketBase's rate-limit rules to its auth
// routes (the sign-ins, and the requests that mail a code or a link) per
// client network, where PocketBase's own limiter counts each exact address.
package authlimit

import (
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/clientnet"
)

// authRoutes are the routes of auth collections that PocketBase's rate
// limiter counts per collection, by route pattern, with the tags their
// rules are found by (PocketBase's apis/record_auth.go): the sign-ins
// (tagged "auth" too, the built-in *:auth rule), and the requests that mail
// a code or a link.
var authRoutes = map[string][]string{
	"GET /api/collections/{collection}/auth-methods":            {"listAuthMethods"},
	"POST /api/collections/{collection}/auth-refresh":           {"authRefresh"},
	"POST /api/collections/{collection}/auth-with-password":     {"authWithPassword", "auth"},
	"POST /api/collections/{collection}/auth-with-oauth2":       {"authWithOAuth2", "auth"},
	"POST /api/collections/{collection}/request-otp":            {"requestOTP"},
	"POST /api/collections/{collection}/auth-with-otp":          {"authWithOTP", "auth"},
	"POST /api/collections/{collection}/request-password-reset": {"requestPasswordReset"},
	"POST /api/collections/{collection}/confirm-password-reset": {"confirmPasswordReset"},
	"POST /api/collections/{collection}/request-verification":   {"requestVerification"},
	"POST /api/collections/{collection}/confirm-verification":   {"confirmVerification"},
	"POST /api/collections/{collection}/request-email-change":   {"requestEmailChange"},
	"POST /api/collections/{collection}/confirm-email-change":   {"confirmEmailChange"},
}

// priority runs the throttle after PocketBase has loaded the
// request's auth token (-1020), which decides the rule's audience, and
// just before PocketBase's own limiter; on /v1, after its own rate limit
// (internal/api's middleware_order.go lists the chain).
const priority = apis.DefaultRateLimitMiddlewarePriority - 1

// throttle applies PocketBase's rate-limit rules to its auth routes per
// client network, as /v1 counts keyless callers (clientnet.Of): an IPv6
// client is given a /64, so one guesser has 2^64 addresses, and an
// IPv4-mapped address is the IPv4 client it maps. PocketBase's limiter,
// which counts each exact address, still runs after it; a network's count
// is never below one of its addresses', so on these routes the network's
// is the one that binds. The rules, the exclusions and the switch are
// PocketBase's settings (dashboard, Settings, Rate limits), read at each
// request.
type throttle struct {
	mu      sync.Mutex
	windows map[string]*authWindow
	swept   time.Time
}

// authWindow is a fixed window, as PocketBase's: it starts at its first
// request and admits the rule's count until it ends.
type authWindow struct {
	end      time.Time
	admitted int
}

// authSweepEvery is how often ended windows are dropped, so that the
// throttle holds only the networks seen within its rules' durations.
const authSweepEvery = time.Minute

// Middleware is a new throttle as a router middleware.
func Middleware() *hook.Handler[*core.RequestEvent] {
	t := &throttle{windows: map[string]*authWindow{}, swept: time.Now()}
	return &hook.Handler[*core.RequestEvent]{Id: "petstoreAuthThrottle", Priority: priority, Func: t.check}
}

func (t *throttle) check(e *core.RequestEvent) error {
	tags, ok := authRoutes[e.Request.Pattern]
	if !ok {
		return e.Next()
	}
	settings := e.App.Settings().RateLimits
	ip := e.RealIP()
	// PocketBase's own exceptions: the limiter off, a superuser, an
	// excluded address.
	if !settings.Enabled || e.HasSuperuserAuth() || ip == "" || inList(settings.ExcludedIPs, ip) {
		return e.Next()
	}
	collection, err := e.App.FindCachedCollectionByNameOrId(e.Request.PathValue("collection"))
	if err != nil {
		return e.Next() // PocketBase answers it 404
	}
	// The labels PocketBase looks the rule up by, in its order: the
	// collection's tags, the wildcard tags, the method and path, the path.
	labels := make([]string, 0, 2*len(tags)+2)
	for _, tag := range tags {
		labels = append(labels, collection.Name+":"+tag)
	}
	for _, tag := range tags {
		labels = append(labels, "*:"+tag)
	}
	labels = append(labels, e.Request.Method+" "+e.Request.URL.Path, e.Request.URL.Path)
	audience := []string{core.RateLimitRuleAudienceAll, core.RateLimitRuleAudienceGuest}
	if e.Auth != nil {
		audience = []string{core.RateLimitRuleAudienceAll, core.RateLimitRuleAudienceAuth}
	}
	rule, ok := settings.FindRateLimitRule(labels, audience...)
	if !ok {
		return e.Next()
	}
	// A changed rule starts counting afresh, as PocketBase's does.
	key := collection.Id + " " + e.Request.Pattern + " " + rule.String() + " " + clientnet.Of(ip)
	if !t.take(key, rule, time.Now()) {
		return e.TooManyRequestsError("", errors.New("triggered rate limit rule "+rule.String()+" for the client network "+clientnet.Of(ip)))
	}
	return e.Next()
}

// take counts a request in key's window and says whether rule admits it;
// a refused request is not counted.
func (t *throttle) take(key string, rule core.RateLimitRule, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.swept) >= authSweepEvery {
		for k, w := range t.windows {
			if !now.Before(w.end) {
				delete(t.windows, k)
			}
		}
		t.swept = now
	}
	w := t.windows[key]
	if w == nil || !now.Before(w.end) {
		w = &authWindow{end: now.Add(time.Duration(rule.Duration) * time.Second)}
		t.windows[key] = w
	}
	if w.admitted >= rule.MaxRequests {
		return false
	}
	w.admitted++
	return true
}

// inList says whether ip is one of the addresses or subnets in list, as
// PocketBase reads its settings' excluded addresses.
func inList(list []string, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	for _, item := range list {
		if prefix, err := netip.ParsePrefix(item); err == nil {
			if prefix.Contains(addr) {
				return true
			}
		} else if a, err := netip.ParseAddr(item); err == nil && a == addr {
			return true
		}
	}
	return false
}
