package proxytrust

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/pocketbase/pocketbase/core"
)

// ApplyHeaders saves headers (--trusted-proxy-headers: comma-separated
// header names, X-Forwarded-For), when set, as PocketBase's trusted proxy
// headers: a flag or variable declares them for every start, where the
// dashboard's setting lasts until changed. It warns when proxyAddresses
// (--proxy-addresses) names proxies and no header is trusted: every client
// behind them would then count as the proxy's one address.
func ApplyHeaders(app core.App, headers, proxyAddresses string, log *slog.Logger) error {
	if headers != "" {
		var names []string
		for h := range strings.SplitSeq(headers, ",") {
			if h = strings.TrimSpace(h); h != "" {
				names = append(names, h)
			}
		}
		settings := app.Settings()
		if !slices.Equal(settings.TrustedProxy.Headers, names) {
			settings.TrustedProxy.Headers = names
			if err := app.Save(settings); err != nil {
				return fmt.Errorf("--trusted-proxy-headers: %w", err)
			}
			log.Info("Trusted proxy headers set from --trusted-proxy-headers", "headers", names)
		}
	}
	if proxyAddresses != "" && len(app.Settings().TrustedProxy.Headers) == 0 {
		log.Warn("--proxy-addresses names proxies but no header gives the client's address (--trusted-proxy-headers, or the dashboard's "+
			"Settings, Application, User IP proxy headers): every client behind them counts as the proxy's address in the rate limits",
			"proxyAddresses", proxyAddresses)
	}
	return nil
}
