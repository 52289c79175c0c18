package migrations

import (
	"slices"

	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// authRule is PocketBase's built-in rule for its auth routes (sign-in with
// a password, OAuth2, OTP): 2 requests per 3 seconds per client address.
var authRule = core.RateLimitRule{Label: "*:auth", MaxRequests: 2, Duration: 3}

// pocketBaseOtherRules are the other rules PocketBase ships with its rate
// limiter off, as it ships them (v0.39).
var pocketBaseOtherRules = []core.RateLimitRule{
	{Label: "*:create", MaxRequests: 20, Duration: 5},
	{Label: "/api/batch", MaxRequests: 3, Duration: 1},
	{Label: "/api/", MaxRequests: 300, Duration: 10},
}

// PocketBase's own rate limiter is on for its auth routes, so that guessing
// the superuser password, which guards the dashboard and every staff route,
// gets 429. PocketBase ships the limiter off, with rules ready: this turns
// it on with the built-in *:auth rule (added when no *:auth rule is there).
// When the limiter was off, PocketBase's other shipped rules, never in force
// until now and not staff's choice, are dropped as they were shipped, so that
// turning it on limits sign-in and nothing else (a health check polled from
// one address stays unlimited). Every other setting, and every rule staff
// made or changed, stays as it is. Staff change it all in the dashboard:
// Settings, Rate limits. Reverted, the limiter is off again; the dropped
// rules, never in force, do not come back.
func init() {
	m.Register(func(app core.App) error {
		settings := app.Settings()
		limits := &settings.RateLimits
		if !limits.Enabled {
			limits.Rules = slices.DeleteFunc(limits.Rules, func(r core.RateLimitRule) bool {
				return slices.Contains(pocketBaseOtherRules, r)
			})
		}
		if _, ok := limits.FindRateLimitRule([]string{authRule.Label}); !ok {
			limits.Rules = append(limits.Rules, authRule)
		}
		limits.Enabled = true
		return app.Save(settings)
	}, func(app core.App) error {
		settings := app.Settings()
		settings.RateLimits.Enabled = false
		return app.Save(settings)
	})
}
