package client

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := http.Header{
		"X-Ratelimit-Limit":     {"60"},
		"X-Ratelimit-Remaining": {"59"},
		"X-Ratelimit-Reset":     {"1800000042"},
		"Ratelimit-Policy":      {`"minute";q=60;w=60, "day";q=1000;w=86400`},
		"Ratelimit":             {`"minute";r=59;t=42, "day";r=990;t=3600`},
	}
	want := RateLimit{
		Limit: 60, Remaining: 59, Reset: now.Add(42 * time.Second),
		Windows: []RateLimitWindow{
			{Name: "minute", Limit: 60, Period: time.Minute, Remaining: 59, Reset: now.Add(42 * time.Second)},
			{Name: "day", Limit: 1000, Period: 24 * time.Hour, Remaining: 990, Reset: now.Add(time.Hour)},
		},
	}
	if got := parseRateLimit(h, now); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}

	// Structured Field variants: tokens, spaces, split across field lines,
	// unknown parameters, a comma inside a quoted name.
	h = http.Header{
		"Ratelimit-Policy": {`minute;q=60;w=60;pk=:abc=:`, ` "day" ; q=1000 ; w=86400`},
		"Ratelimit":        {`"a,b";r=1;t=2`},
	}
	got := parseRateLimit(h, now)
	if len(got.Windows) != 3 || got.Windows[0] != (RateLimitWindow{Name: "minute", Limit: 60, Period: time.Minute}) ||
		got.Windows[1] != (RateLimitWindow{Name: "day", Limit: 1000, Period: 24 * time.Hour}) ||
		got.Windows[2] != (RateLimitWindow{Name: "a,b", Remaining: 1, Reset: now.Add(2 * time.Second)}) {
		t.Fatalf("variants: %+v", got.Windows)
	}

	// Nothing, or nothing readable: the zero RateLimit.
	for _, h := range []http.Header{
		{},
		{"X-Ratelimit-Limit": {"many"}, "Ratelimit-Policy": {`"unterminated;q=1`}, "Ratelimit": {`;r=1`}},
	} {
		if got := parseRateLimit(h, now); !reflect.DeepEqual(got, RateLimit{}) {
			t.Errorf("%v: %+v, want the zero RateLimit", h, got)
		}
	}
}
