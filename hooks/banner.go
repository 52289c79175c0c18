package hooks

import (
	"fmt"
	"io"
	"log"
	"net/url"
	"strings"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/version"
)

// bindBanner logs the start, and prints where everything is for people, in
// place of PocketBase's banner (main hides it), which names only /api/ and
// /_/; and the first-start hint in place of PocketBase's (installer.go).
func bindBanner(app core.App, opts Options, s *Service) {
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreBanner",
		Func: func(se *core.ServeEvent) error {
			switch {
			case opts.Installer != nil && opts.Banner != nil:
				se.InstallerFunc = installer(opts.Installer, s.log, opts.Self)
			case opts.Installer != nil: // JSON logs: the hint is an event
				se.InstallerFunc = installer(nil, s.log, opts.Self)
			}
			// The listener exists once the rest of the chain has run.
			if err := se.Next(); err != nil {
				return err
			}
			base := baseURL(se.Server.Addr, opts.HTTPS)
			s.log.Info("petstore started", "address", base, "version", version.Read().String(),
				"dataDir", se.App.DataDir(), "publicURL", s.base.Public(), "rateLimits", rateLimitStore(opts.Limits.RedisURL))
			if opts.Banner != nil {
				printBanner(opts.Banner, base, s.base.Public())
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

// rateLimitStore names where rate limits are counted, without the Redis
// URL's passwords: the user part's, and the query's (Sentinel's password=
// and sentinel_password=).
func rateLimitStore(redisURL string) string {
	if redisURL == "" {
		return "memory"
	}
	u, err := url.Parse(redisURL)
	if err != nil {
		return "redis"
	}
	q := u.Query()
	for name := range q {
		if strings.Contains(strings.ToLower(name), "password") {
			q.Set(name, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// printBanner names the addresses under base, the server's, and the public
// URL of /v1 when there is one, in one write: a reader of the output (a log
// collector, a supervisor) never sees half of it. Every address it prints
// answers something other than 404 when opened: /v1 and /api/ themselves
// are no resources, so it names /v1/pets and /api/health.
func printBanner(w io.Writer, base, public string) {
	b := new(strings.Builder)
	log.New(b, "", log.LstdFlags).Print()
	text := strings.TrimSpace(b.String())
	b.Reset()
	fmt.Fprintf(b, "%s Server started at %s\n", text, base)
	fmt.Fprintf(b, "├─ API:         %s/v1/pets (send an API key: Authorization: Bearer KEY)\n", base)
	if public != "" {
		fmt.Fprintf(b, "├─ Public API:  %s/pets (Link, Location, the served documents)\n", public)
	}
	fmt.Fprintf(b, "├─ Reference:   %s/docs/\n", base)
	fmt.Fprintf(b, "├─ Staff page:  %s/staff/ (API keys)\n", base)
	fmt.Fprintf(b, "├─ Dashboard:   %s/_/\n", base)
	fmt.Fprintf(b, "└─ PocketBase:  %s/api/health (PocketBase's own API, under /api/)\n", base)
	io.WriteString(w, b.String())
}

// baseURL is the server's address as PocketBase's own banner derives it.
func baseURL(host string, https bool) string {
	scheme := "http"
	if https {
		scheme = "https"
	}
	if host == "" || strings.HasSuffix(host, ":http") || strings.HasSuffix(host, ":https") {
		host = "127.0.0.1"
	}
	return scheme + "://" + host
}
