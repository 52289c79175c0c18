package connlimit

import (
	"log/slog"
	"time"

	"petstore/internal/logging"
)

// DefaultPerAddress is the public listener's PerAddress bound when the
// flags set none (--max-conns-per-address).
const DefaultPerAddress = 256

// maxGlobalCeiling is the most connections DefaultGlobal allows, whatever
// the descriptor limit: an idle connection costs about 20 KB of memory.
const maxGlobalCeiling = 10000

// DefaultGlobal is the public listener's Global bound for a soft descriptor
// limit of soft (0: unknown): a quarter of the limit, and at least 256
// descriptors, are kept for everything else (SQLite's files, Redis, the
// metrics listener, backups), and at most maxGlobalCeiling.
func DefaultGlobal(soft uint64) int {
	if soft == 0 || soft > 4*maxGlobalCeiling {
		return maxGlobalCeiling
	}
	n := int(soft) - max(256, int(soft)/4)
	return max(min(n, maxGlobalCeiling), 1)
}

// NewPublic raises the process's descriptor limit, logs it, and makes the
// public listener's limiter: the bounds the flags set, the global one
// derived from the limit when they set none, PerAddress and PerNetwork
// defaulted, and bounds.Exempt (--proxy-addresses) exempt. proxied says
// that PocketBase trusts proxy headers: a proxy is in front, whose address
// --proxy-addresses should name. idle is the server's idle timeout, logged
// with the bounds.
func NewPublic(bounds Config, proxied bool, idle time.Duration, log *slog.Logger) (*Limiter, error) {
	soft, hard, err := RaiseDescriptorLimit()
	switch {
	case err == nil:
		log.Info("Open files limit", "soft", soft, "hard", hard)
	case soft != 0:
		log.Warn("Could not raise the open files limit to its hard limit", "soft", soft, "hard", hard, "error", err)
	}
	if bounds.Global == 0 {
		bounds.Global = DefaultGlobal(soft)
	} else if soft != 0 && uint64(bounds.Global) >= soft {
		log.Warn("--max-conns is not below the open files limit: clients can use up the descriptors SQLite needs",
			"maxConns", bounds.Global, "soft", soft)
	}
	if bounds.PerAddress == 0 {
		bounds.PerAddress = DefaultPerAddress
	}
	if bounds.PerNetwork == 0 {
		bounds.PerNetwork = DefaultPerNetwork(bounds.Global)
	}
	if proxied && len(bounds.Exempt) == 0 {
		log.Warn("Trusted proxy headers are set but --proxy-addresses is empty: the proxy's connections are bound like one client's, "+
			"and the headers are believed from any peer; name the proxies to believe them from those alone",
			"maxConnsPerAddress", bounds.PerAddress)
	}
	log.Info("Connection bounds", "maxConns", bounds.Global, "maxConnsPerAddress", bounds.PerAddress, "maxConnsPerNetwork", bounds.PerNetwork,
		"proxyAddresses", bounds.Exempt, "idle_timeout_ms", logging.Milliseconds(idle))
	return New(bounds, log), nil
}
