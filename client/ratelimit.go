package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimit is the rate-limit state an answer reported (docs/rate-limits.md).
// A key has a quota in each of its plan's windows, a minute and a day; every
// request counts in each, whatever its answer. The zero RateLimit means the
// answer reported none.
type RateLimit struct {
	// Limit, Remaining and Reset describe the binding window, the one with
	// fewer requests remaining (X-RateLimit-Limit, X-RateLimit-Remaining,
	// X-RateLimit-Reset). Remaining is 0 on a 429.
	Limit     int64
	Remaining int64
	Reset     time.Time
	// Windows are all the windows, in the service's order (the IETF
	// RateLimit-Policy and RateLimit fields).
	Windows []RateLimitWindow
}

// RateLimitWindow is the state of one window of a RateLimit.
type RateLimitWindow struct {
	Name      string        // "minute" or "day"
	Limit     int64         // the quota: requests per Period
	Period    time.Duration // the window's length
	Remaining int64         // requests left in this window
	Reset     time.Time     // when this window starts again
}

// parseRateLimit reads an answer's rate-limit fields; now is when the
// answer arrived, which the RateLimit field's relative resets count from.
// A field that is missing or malformed leaves its part zero.
func parseRateLimit(h http.Header, now time.Time) RateLimit {
	var rl RateLimit
	rl.Limit, _ = strconv.ParseInt(h.Get("X-RateLimit-Limit"), 10, 64)
	rl.Remaining, _ = strconv.ParseInt(h.Get("X-RateLimit-Remaining"), 10, 64)
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		rl.Reset = time.Unix(reset, 0)
	}
	window := func(name string) *RateLimitWindow {
		for i := range rl.Windows {
			if rl.Windows[i].Name == name {
				return &rl.Windows[i]
			}
		}
		rl.Windows = append(rl.Windows, RateLimitWindow{Name: name})
		return &rl.Windows[len(rl.Windows)-1]
	}
	for _, item := range structuredList(h.Values("RateLimit-Policy")) {
		w := window(item.name)
		w.Limit = item.params["q"]
		w.Period = time.Duration(item.params["w"]) * time.Second
	}
	for _, item := range structuredList(h.Values("RateLimit")) {
		w := window(item.name)
		w.Remaining = item.params["r"]
		w.Reset = now.Add(time.Duration(item.params["t"]) * time.Second)
	}
	return rl
}

// listItem is a member of a Structured Field list (RFC 8941) with integer
// parameters, the shape of the IETF RateLimit fields:
// "minute";q=60;w=60, "day";q=1000;w=86400.
type listItem struct {
	name   string
	params map[string]int64
}

// structuredList reads the members of a Structured Field list. It reads
// what the IETF RateLimit fields hold, a string or token with integer
// parameters, and skips a member it cannot read.
func structuredList(values []string) []listItem {
	var items []listItem
	for _, v := range values {
		for _, member := range splitOutsideQuotes(v, ',') {
			parts := splitOutsideQuotes(member, ';')
			name := strings.TrimSpace(parts[0])
			if strings.HasPrefix(name, `"`) {
				var err error
				if name, err = strconv.Unquote(name); err != nil {
					continue
				}
			}
			if name == "" {
				continue
			}
			item := listItem{name: name, params: map[string]int64{}}
			for _, p := range parts[1:] {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					item.params[k] = n
				}
			}
			items = append(items, item)
		}
	}
	return items
}

// splitOutsideQuotes splits s at each sep that is not inside a quoted
// string.
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && quoted:
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
