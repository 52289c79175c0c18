package hooks

import (
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/banner"
	"petstore/internal/options"
	"petstore/internal/version"
)

// bindBanner logs the start, and prints where everything is for people, in
// place of PocketBase's banner (main hides it), which names only /api/ and
// /_/; and the first-start hint in place of PocketBase's (internal/banner).
func bindBanner(app core.App, opts options.Options, s *Service) {
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreBanner",
		Func: func(se *core.ServeEvent) error {
			switch {
			case opts.Installer != nil && opts.Banner != nil:
				se.InstallerFunc = banner.Installer(opts.Installer, s.log, opts.Self)
			case opts.Installer != nil: // JSON logs: the hint is an event
				se.InstallerFunc = banner.Installer(nil, s.log, opts.Self)
			}
			// The listener exists once the rest of the chain has run.
			if err := se.Next(); err != nil {
				return err
			}
			base := banner.BaseURL(se.Server.Addr, opts.HTTPS)
			s.log.Info("petstore started", "address", base, "version", version.Read().String(),
				"dataDir", se.App.DataDir(), "publicURL", opts.PublicURL.Public(), "rateLimits", opts.Limits.Store())
			if opts.Banner != nil {
				banner.Print(opts.Banner, base, opts.PublicURL.Public())
			}
			// Under systemd's Type=notify the unit is started once the
			// listener is: no poll of a fixed port (none without NOTIFY_SOCKET).
			if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
				s.log.Warn("Could not tell systemd that petstore is ready", "error", err)
			}
			return nil
		},
	})
}
