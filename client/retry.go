package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// policy is when and how long a call waits before its next attempt.
// retryablehttp runs the loop (attempts, body rewinding, waiting, the
// context); policy decides.
type policy struct {
	maxAttempts            int
	minBackoff, maxBackoff time.Duration
	maxRetryAfter          time.Duration
}

func newPolicy(o Options) policy {
	p := policy{maxAttempts: 5, minBackoff: 250 * time.Millisecond, maxBackoff: 30 * time.Second, maxRetryAfter: DefaultMaxRetryAfter}
	if o.MaxAttempts > 0 {
		p.maxAttempts = o.MaxAttempts
	}
	if o.MinBackoff > 0 {
		p.minBackoff = o.MinBackoff
	}
	if o.MaxBackoff > 0 {
		p.maxBackoff = o.MaxBackoff
	}
	if o.MaxRetryAfter > 0 {
		p.maxRetryAfter = o.MaxRetryAfter
	}
	return p
}

// checkRetry retries network errors (except those a retry cannot mend, as
// retryablehttp judges them: a bad URL scheme, an untrusted certificate, too
// many redirects), 429 and 503. It does not start a wait for a Retry-After
// that ends after the context's deadline or beyond maxRetryAfter: the call
// then ends at once with that answer.
func (p policy) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, nil, err)
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return false, nil
	}
	wait, ok := retryAfter(resp, time.Now())
	if !ok {
		return true, nil
	}
	if deadline, has := ctx.Deadline(); wait > p.maxRetryAfter || (has && time.Now().Add(wait).After(deadline)) {
		return false, nil
	}
	return true, nil
}

// backoff waits for Retry-After when the answer has one (and says so),
// else a random time between 0 and min(max, min * 2^attempt) ("full
// jitter"), so that clients refused together do not come back together.
func (p policy) backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) (time.Duration, bool) {
	if wait, ok := retryAfter(resp, time.Now()); ok {
		return wait, true
	}
	ceiling := maxWait
	if attempt < 32 && minWait<<attempt < maxWait {
		ceiling = minWait << attempt
	}
	return rand.N(ceiling + 1), false
}

// retryAfter reads the Retry-After of a 429 or 503 (RFC 9110, section
// 10.2.3): seconds, or an HTTP date.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0, false
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 31); err == nil {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
