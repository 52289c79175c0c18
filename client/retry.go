package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// policy is how long a call and each of its attempts may take, and when
// and how long a call waits before its next attempt.
type policy struct {
	maxAttempts             int
	minBackoff, maxBackoff  time.Duration
	maxRetryAfter           time.Duration
	attemptTimeout, timeout time.Duration
}

func newPolicy(o Options) policy {
	p := policy{maxAttempts: 5, minBackoff: 250 * time.Millisecond, maxBackoff: 30 * time.Second,
		maxRetryAfter: DefaultMaxRetryAfter, attemptTimeout: DefaultAttemptTimeout, timeout: DefaultTimeout}
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
	if o.AttemptTimeout != 0 {
		p.attemptTimeout = o.AttemptTimeout
	}
	if o.Timeout != 0 {
		p.timeout = o.Timeout
	}
	return p
}

// maxAnswerBytes bounds the body read from an answer: the largest the API
// sends, a page of 100 pets, is under 64 KiB.
const maxAnswerBytes = 1 << 20

// response is an answer, read whole.
type response struct {
	method     string
	url        *url.URL
	status     int
	statusText string // "503 Service Unavailable"
	header     http.Header
	body       []byte
}

// do sends a request to the operation at path with query, in (JSON) as its
// body when not nil, and header, under the Client's and opts' settings and
// retry policy, and decodes an answer with status want into out, which
// valid then checks. Any other answer is an *Error; one that is not the
// API's JSON says so. It returns what the final answer told, and hands it
// to opts' ReportAnswer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in any, header http.Header, want int, out any, valid func() bool, opts []CallOption) (*response, Answer, error) {
	cfg := c.config(opts)
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, Answer{}, err
		}
	}
	u := c.endpoint(path, query)
	revalidates := method == http.MethodGet && c.answers != nil && cfg.header.Get("If-None-Match") == ""
	var kept *keptAnswer
	if revalidates {
		if kept = c.answers.get(u.String()); kept != nil {
			header = header.Clone()
			if header == nil {
				header = http.Header{}
			}
			header.Set("If-None-Match", kept.etag)
		}
	}
	resp, attempts, err := c.send(ctx, cfg, method, u, body, header)
	if err != nil {
		cfg.report(Answer{Attempts: attempts})
		return nil, Answer{Attempts: attempts}, err
	}
	a := Answer{StatusCode: resp.status, RequestID: resp.header.Get("Request-Id"), Replayed: resp.header.Get("Idempotent-Replayed") == "true",
		RateLimit: parseRateLimit(resp.header, time.Now()), Header: resp.header, Attempts: attempts}
	if kept != nil && resp.status == http.StatusNotModified {
		resp = kept.revalidated(resp)
		a.Header = resp.header
	}
	cfg.report(a)
	if resp.status != want {
		return resp, a, c.errorFrom(resp, a)
	}
	if !isJSON(resp.header) || len(resp.body) > maxAnswerBytes || json.Unmarshal(resp.body, out) != nil || !valid() {
		return resp, a, c.notTheAPI(resp, a)
	}
	if revalidates {
		c.answers.keep(u.String(), resp)
	}
	return resp, a, nil
}

// send makes the attempts of one call, and returns the last answer and the
// number of attempts, or the error that ended the call: a *TimeoutError
// when its deadline (or its last attempt's) passed, a *NetworkError when
// no answer came, the context's error when the caller cancelled it.
//
// A call retries network errors (except those a retry cannot mend, such
// as an untrusted certificate), attempts that time out, and 429, 500, 502,
// 503 and 504, when it may: a GET always, another method only with an
// Idempotency-Key, which makes the service do the work once (it stores no
// 500 for a key, so a retry after one does the work). It does not
// start a wait for a Retry-After beyond maxRetryAfter or the call's
// deadline: it returns that answer at once.
func (c *Client) send(parent context.Context, cfg callConfig, method string, u *url.URL, body []byte, header http.Header) (*response, int, error) {
	ctx, cancel := timeoutContext(parent, cfg.policy.timeout)
	defer cancel()
	retryable := method == http.MethodGet || method == http.MethodHead || header.Get("Idempotency-Key") != ""
	lastID := ""
	for attempt := 1; ; attempt++ {
		resp, attemptTimedOut, err := c.attempt(ctx, cfg, method, u, body, header, attempt)
		if resp != nil && resp.header.Get("Request-Id") != "" {
			lastID = resp.header.Get("Request-Id")
		}
		if ctx.Err() != nil {
			return nil, attempt, c.ended(parent, ctx, method, u, attempt, lastID, err)
		}
		last := !retryable || attempt >= cfg.policy.maxAttempts
		var wait time.Duration
		fromHeader := false
		switch {
		case err != nil && (last || !mendable(err)):
			if attemptTimedOut {
				return nil, attempt, &TimeoutError{Method: method, URL: u.Redacted(), Attempts: attempt, RequestID: lastID, Attempt: true}
			}
			return nil, attempt, &NetworkError{Method: method, URL: u.Redacted(), Attempts: attempt, RequestID: lastID, Err: err}
		case err != nil:
			wait = cfg.policy.backoff(attempt - 1)
		case last || !retryStatus(resp.status):
			return resp, attempt, nil
		default:
			wait, fromHeader = retryAfter(resp.status, resp.header, time.Now())
			if deadline, has := ctx.Deadline(); fromHeader && (wait > cfg.policy.maxRetryAfter || (has && time.Now().Add(wait).After(deadline))) {
				return resp, attempt, nil
			}
			if !fromHeader {
				wait = cfg.policy.backoff(attempt - 1)
			}
		}
		if c.onWait != nil {
			w := Wait{Method: method, URL: u.Redacted(), Attempt: attempt, Delay: wait, RetryAfter: fromHeader, Err: err}
			if resp != nil {
				w.StatusCode = resp.status
			}
			c.onWait(w)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, attempt, c.ended(parent, ctx, method, u, attempt, lastID, nil)
		case <-t.C:
		}
	}
}

// ended is the error of a call whose context ended after attempts: the
// caller's cancellation as it is, else a *TimeoutError.
func (c *Client) ended(parent, ctx context.Context, method string, u *url.URL, attempts int, lastID string, err error) error {
	if errors.Is(parent.Err(), context.Canceled) {
		return parent.Err()
	}
	return &TimeoutError{Method: method, URL: u.Redacted(), Attempts: attempts, RequestID: lastID, Err: err}
}

// attempt sends one attempt and reads its answer whole, within the
// attempt's timeout. timedOut tells that err is that timeout's.
func (c *Client) attempt(ctx context.Context, cfg callConfig, method string, u *url.URL, body []byte, header http.Header, n int) (_ *response, timedOut bool, err error) {
	actx, cancel := timeoutContext(ctx, cfg.policy.attemptTimeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, u.String(), reader)
	if err != nil {
		return nil, false, err
	}
	for name, values := range cfg.header {
		req.Header[name] = values
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	var resp *response
	hr, err := c.http.Do(req)
	if err == nil {
		resp = &response{method: method, url: u, status: hr.StatusCode, statusText: hr.Status, header: hr.Header}
		resp.body, err = io.ReadAll(io.LimitReader(hr.Body, maxAnswerBytes+1))
		hr.Body.Close()
		if err != nil {
			err = fmt.Errorf("reading the answer: %w", err)
			resp = nil
		}
	}
	timedOut = err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	if c.onAttempt != nil {
		a := Attempt{Method: method, URL: u.Redacted(), Attempt: n, Duration: time.Since(start), Err: err}
		if resp != nil {
			a.StatusCode, a.RequestID = resp.status, resp.header.Get("Request-Id")
		}
		c.onAttempt(a)
	}
	return resp, timedOut, err
}

// retryStatus tells whether an answer with status may be retried: a rate
// limit's 429, the service's failure (500), and a gateway's or an
// unavailable service's 502, 503, 504. Stripe's SDKs retry a 500 too: on
// a GET or a keyed create, the only calls retried, a retry is safe.
func retryStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// mendable tells whether a retry may mend a network error: not a bad URL
// scheme, too many redirects, or a certificate the client does not trust.
func mendable(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verification) {
		return false
	}
	msg := err.Error()
	return !strings.Contains(msg, "unsupported protocol scheme") && !strings.Contains(msg, "stopped after")
}

// backoff is a random time between 0 and min(maxBackoff, minBackoff *
// 2^attempt) ("full jitter"), so that clients refused together do not come
// back together.
func (p policy) backoff(attempt int) time.Duration {
	ceiling := p.maxBackoff
	if attempt < 32 && p.minBackoff<<attempt < p.maxBackoff {
		ceiling = p.minBackoff << attempt
	}
	return rand.N(ceiling + 1)
}

// retryAfter reads the Retry-After of a retryable answer (RFC 9110,
// section 10.2.3): seconds, or an HTTP date.
func retryAfter(status int, h http.Header, now time.Time) (time.Duration, bool) {
	if !retryStatus(status) {
		return 0, false
	}
	v := h.Get("Retry-After")
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
