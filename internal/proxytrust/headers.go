package proxytrust

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/envflag"
)

// ApplyHeaders saves headers (--trusted-proxy-headers, X-Forwarded-For),
// when there are any, as PocketBase's trusted proxy headers: a flag or
// variable declares them for every start, where the dashboard's setting
// lasts until changed. It warns when proxies (--proxy-addresses) are named
// and no header is trusted: every client behind them would then count as
// the proxy's one address.
func ApplyHeaders(app core.App, headers []string, proxies Proxies, log *slog.Logger) error {
	if len(headers) > 0 {
		settings := app.Settings()
		if !slices.Equal(settings.TrustedProxy.Headers, headers) {
			settings.TrustedProxy.Headers = slices.Clone(headers)
			if err := app.Save(settings); err != nil {
				return fmt.Errorf("--trusted-proxy-headers: %w", err)
			}
			log.Info("Trusted proxy headers set from --trusted-proxy-headers", "headers", headers)
		}
	}
	if len(proxies) > 0 && len(app.Settings().TrustedProxy.Headers) == 0 {
		log.Warn("--proxy-addresses names proxies but no header gives the client's address (--trusted-proxy-headers, or the dashboard's "+
			"Settings, Application, User IP proxy headers): every client behind them counts as the proxy's address in the rate limits",
			"proxyAddresses", []netip.Prefix(proxies))
	}
	return nil
}

// GuardHeaders refuses, when headers are declared (--trusted-proxy-headers),
// a change of PocketBase's trusted proxy headers through the settings API
// (the dashboard's Settings, Application, User IP proxy headers): the flag
// sets them again at each start, so a change there would hold until the
// next restart and then silently go.
func GuardHeaders(app core.App, headers []string) {
	if len(headers) == 0 {
		return
	}
	app.OnSettingsUpdateRequest().BindFunc(func(e *core.SettingsUpdateRequestEvent) error {
		if !slices.Equal(e.NewSettings.TrustedProxy.Headers, e.OldSettings.TrustedProxy.Headers) {
			return e.BadRequestError(fmt.Sprintf("This setting is declared by --trusted-proxy-headers (%s) at each start: "+
				"change it there, then restart petstore.", envflag.Name("trusted-proxy-headers")), nil)
		}
		return e.Next()
	})
}

// ParseHeaders reads --trusted-proxy-headers: header names, comma-separated
// (X-Forwarded-For); an empty list is none.
func ParseHeaders(list string) ([]string, error) {
	var names []string
	for h := range strings.SplitSeq(list, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		if !isToken(h) {
			return nil, fmt.Errorf("%q is not a header name (X-Forwarded-For)", h)
		}
		names = append(names, h)
	}
	return names, nil
}

// isToken reports whether s is an HTTP token (RFC 9110), what a header's
// name is made of.
func isToken(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return s != ""
}
