package client

import (
	"net/http"
	"testing"
	"time"
)

// Without Retry-After, attempt n waits a uniformly random time in
// [0, min(max, min*2^n)]: bounded, and spread over the whole range.
func TestBackoffIsFullJitter(t *testing.T) {
	const minWait, maxWait = 100 * time.Millisecond, 3 * time.Second
	p := newPolicy(Options{MinBackoff: minWait, MaxBackoff: maxWait})
	for attempt, ceiling := range []time.Duration{100, 200, 400, 800, 1600, 3000, 3000} {
		ceiling *= time.Millisecond
		if attempt > 4 {
			ceiling = maxWait
		}
		var low, high bool
		for range 2000 {
			w := p.backoff(attempt)
			if w < 0 || w > ceiling {
				t.Fatalf("attempt %d: waited %v, want 0..%v", attempt, w, ceiling)
			}
			low = low || w < ceiling/10
			high = high || w > ceiling*9/10
		}
		if !low || !high {
			t.Fatalf("attempt %d: waits not spread over 0..%v", attempt, ceiling)
		}
	}
	if w := p.backoff(200); w > maxWait {
		t.Fatalf("attempt 200 waited %v", w)
	}
}

func TestRetryAfterIsRead(t *testing.T) {
	now := time.Now()
	for value, want := range map[string]time.Duration{
		"7": 7 * time.Second,
		"0": 0,
		now.Add(90 * time.Second).UTC().Format(http.TimeFormat): 90 * time.Second,
	} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
			got, ok := retryAfter(status, http.Header{"Retry-After": {value}}, now)
			if got < want-time.Second || got > want || !ok {
				t.Errorf("%d Retry-After %q: %v, want %v", status, value, got, want)
			}
		}
	}
	// Unparseable, negative, or on a status that is not retried: none.
	for status, value := range map[int]string{http.StatusTooManyRequests: "soon", http.StatusServiceUnavailable: "-5", http.StatusBadRequest: "60"} {
		if got, ok := retryAfter(status, http.Header{"Retry-After": {value}}, now); ok {
			t.Errorf("%d Retry-After %q: read as %v", status, value, got)
		}
	}
}
