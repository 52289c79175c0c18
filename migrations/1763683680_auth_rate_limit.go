package migrations

import (
	"github.com/pocketbase/pocketbase/core"
	m "github.com/pocketbase/pocketbase/migrations"
)

// PocketBase's own rate limiter is on, so that guessing the superuser
// password, which guards the dashboard and every staff route, gets 429
// (per client address). PocketBase ships it off, with rules ready: this
// turns it on, adds PocketBase's built-in rule for its auth routes when
// the rules have no `*:auth` one, and leaves every other setting and rule
// as it is. Staff change it in the dashboard: Settings, Rate limits.
// PocketBase never limits requests signed in as a superuser.
func init() {
	m.Register(func(app core.App) error {
		settings := app.Settings()
		settings.RateLimits.Enabled = true
		if _, ok := settings.RateLimits.FindRateLimitRule([]string{"*:auth"}); !ok {
			settings.RateLimits.Rules = append(settings.RateLimits.Rules,
				core.RateLimitRule{Label: "*:auth", MaxRequests: 2, Duration: 3})
		}
		return app.Save(settings)
	}, func(app core.App) error {
		settings := app.Settings()
		settings.RateLimits.Enabled = false
		return app.Save(settings)
	})
}
