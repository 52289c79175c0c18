package client

import (
	"net/http"
	"testing"
	"time"
)

// Without Retry-After, attempt n waits a uniformly random time in
// [0, min(max, min*2^n)]: bounded, and spread over the whole range.
func TestBackoffIsFullJitter(t *testing.T) {
	p := newPolicy(Options{})
	const minWait, maxWait = 100 * time.Millisecond, 3 * time.Second
	for attempt, ceiling := range []time.Duration{100, 200, 400, 800, 1600, 3000, 3000} {
		ceiling *= time.Millisecond
		if attempt > 4 {
			ceiling = maxWait
		}
		var low, high bool
		for range 2000 {
			w, fromHeader := p.backoff(minWait, maxWait, attempt, nil)
			if fromHeader {
				t.Fatal("a backoff without an answer says it is a Retry-After")
			}
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
	if w, _ := p.backoff(minWait, maxWait, 200, nil); w > maxWait {
		t.Fatalf("attempt 200 waited %v", w)
	}
}

func TestRetryAfterIsWaitedFor(t *testing.T) {
	p := newPolicy(Options{})
	now := time.Now()
	for value, want := range map[string]time.Duration{
		"7": 7 * time.Second,
		"0": 0,
		now.Add(90 * time.Second).UTC().Format(http.TimeFormat): 90 * time.Second,
	} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {value}}}
			got, fromHeader := p.backoff(time.Millisecond, time.Millisecond, 0, resp)
			if got < want-time.Second || got > want || !fromHeader {
				t.Errorf("%d Retry-After %q: waited %v, want %v", status, value, got, want)
			}
		}
	}
	// Unparseable, negative, or on another status: the jittered backoff.
	for _, resp := range []*http.Response{
		{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"soon"}}},
		{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"-5"}}},
		{StatusCode: http.StatusInternalServerError, Header: http.Header{"Retry-After": {"60"}}},
	} {
		if got, fromHeader := p.backoff(time.Millisecond, time.Millisecond, 0, resp); got > time.Millisecond || fromHeader {
			t.Errorf("%d Retry-After %q: waited %v", resp.StatusCode, resp.Header.Get("Retry-After"), got)
		}
	}
}
