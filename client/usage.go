package client

import (
	"context"
	"net/http"
	"time"
)

// Usage is the calling API key's use, and its rate windows after the
// request that asked.
type Usage struct {
	Plan   string      `json:"plan"`
	Today  UsageDay    `json:"today"`
	Month  UsageMonth  `json:"month"`
	Limits UsageLimits `json:"limits"`
	// Days are the last 30 UTC days, oldest first, today's last.
	Days []UsageDay `json:"days"`
}

// UsageCounts are requests by what became of them.
type UsageCounts struct {
	Requests int64 `json:"requests"` // every request: the sum of the four below
	Served   int64 `json:"served"`   // answered 1xx to 3xx
	Refused  int64 `json:"refused"`  // 4xx but 429: the caller's mistake
	Limited  int64 `json:"limited"`  // 429: refused by a rate limit or a ban, counted in no window
	Failed   int64 `json:"failed"`   // 5xx: failed on the service's side
}

// UsageDay is one UTC day's use.
type UsageDay struct {
	Day string `json:"day"` // YYYY-MM-DD
	UsageCounts
}

// UsageMonth is one UTC month's use, up to now.
type UsageMonth struct {
	Month string `json:"month"` // YYYY-MM
	UsageCounts
}

// UsageLimits are the key's rate windows.
type UsageLimits struct {
	PerMinute UsageWindow `json:"perMinute"`
	PerDay    UsageWindow `json:"perDay"`
}

// UsageWindow is a rate window as the rate-limit headers report it.
type UsageWindow struct {
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"` // when its count starts again
}

// GetUsage fetches the calling key's use today, this month and on each of
// the last 30 days (UTC), and its windows after this request. The counts
// cover the requests answered before this one, as the service saved them
// every few seconds. The answer's rate-limit state, request id and
// headers come with it.
//
// The operation is beta (the document's x-stability): it may change
// within v1, announced in the service's changelog first.
//
// Errors: an *Error with CodeUnauthorized for the API key,
// CodeInsufficientScope for a key without pets:read, CodeRateLimitExceeded
// or CodeAPIKeyBanned when the wait is longer than the call may wait; an
// *Error without Code when the answer is not the API's; a network or
// context error when no answer came after the retries.
func (c *Client) GetUsage(ctx context.Context, opts ...CallOption) (UsageResult, error) {
	var got Usage
	_, a, err := c.do(ctx, http.MethodGet, "usage", nil, nil, nil, http.StatusOK, &got,
		func() bool { return got.Plan != "" && len(got.Days) > 0 }, opts)
	if err != nil {
		return UsageResult{}, err
	}
	return UsageResult{Usage: got, Answer: a}, nil
}
