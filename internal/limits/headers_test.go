package limits_test

import (
	"net/http"
	"testing"
	"time"

	"petstore/internal/limits"
)

// decision is a key's request at 12:00:30.5 with 7 left of its minute and
// 9,990 of its day, or, refused, with its minute used up.
func decision(refused bool) limits.Decision {
	at := time.Date(2026, 11, 29, 12, 0, 30, 500_000_000, time.UTC)
	minute := limits.Window{Name: "minute", Period: time.Minute, Limit: 60, Remaining: 7, Reset: at.Add(29500 * time.Millisecond)}
	if refused {
		minute.Remaining, minute.Reached = 0, true
	}
	day := limits.Window{Name: "day", Period: 24 * time.Hour, Limit: 10000, Remaining: 9990, Reset: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	return limits.Decision{At: at, Windows: []limits.Window{minute, day}}
}

func TestSetHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool
		want    map[string]string
	}{
		{"admitted", false, map[string]string{
			"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "7", "X-RateLimit-Reset": "1795953660",
			"RateLimit-Policy": `"minute";q=60;w=60, "day";q=10000;w=86400`,
			"RateLimit":        `"minute";r=7;t=30, "day";r=9990;t=43170`,
			"Retry-After":      "",
		}},
		{"refused", true, map[string]string{
			"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1795953660",
			"RateLimit-Policy": `"minute";q=60;w=60, "day";q=10000;w=86400`,
			"RateLimit":        `"minute";r=0;t=30, "day";r=9990;t=43170`,
			"Retry-After":      "30",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What an earlier layer set is replaced, as Header.Set would.
			h := http.Header{}
			h.Set("X-RateLimit-Remaining", "stale")
			h.Set("RateLimit", "stale")
			decision(tc.refused).SetHeaders(h)
			for name, want := range tc.want {
				if got := h.Values(name); want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
					t.Errorf("%s: %q, want %q", name, got, want)
				}
			}
			set := 0
			for _, want := range tc.want {
				if want != "" {
					set++
				}
			}
			if len(h) != set {
				t.Errorf("%d headers, want only the rate limit's %d: %v", len(h), set, h)
			}
			// Each value is its own: appending to one leaves the others.
			h.Add("X-RateLimit-Limit", "61")
			if got := h.Get("X-RateLimit-Remaining"); got != tc.want["X-RateLimit-Remaining"] {
				t.Errorf("after an Add to another header, X-RateLimit-Remaining is %q", got)
			}
		})
	}
}

// BenchmarkSetHeaders is the rate-limit headers of an admitted request,
// set on every /v1 answer.
func BenchmarkSetHeaders(b *testing.B) {
	d := decision(false)
	b.ReportAllocs()
	for b.Loop() {
		d.SetHeaders(make(http.Header, 16))
	}
}
