package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// Error is an answer a call could not use. Most are the service's refusals,
// with its Error body: Code is then one of the Code constants. Code is empty
// when the answer is not the API's: a proxy's error page, or what a wrong
// base URL leads to; Message then says what came, and asks about the base
// URL when that is the likely cause.
//
// When no answer came, the error is a *NetworkError, or a *TimeoutError when
// the call's deadline passed (errors.Is(err, context.DeadlineExceeded)
// works); a context the caller cancelled ends the call with its error.
type Error struct {
	StatusCode int       // the answer's HTTP status
	Code       ErrorCode // the Error body's code; empty when the answer is not the API's
	Message    string
	// RetryAfter is the answer's Retry-After (429, 503), 0 when absent. A
	// call returns an Error with one when it may not wait that long (see
	// Options.MaxRetryAfter and the context's deadline) or has run out of
	// attempts.
	RetryAfter time.Duration
	// RateLimit is the rate-limit state the answer reported; zero when it
	// reported none (an answer that is not the API's).
	RateLimit RateLimit
	// Scope is, with CodeInsufficientScope, the scope the call needs and the
	// API key lacks ("pets:write"), from the answer's WWW-Authenticate;
	// empty otherwise. Staff give a key its scopes.
	Scope string
	// RequestID names the request in the service's logs (the answer's
	// Request-Id): quote it when reporting a problem. Empty when the answer
	// is not the service's.
	RequestID string
	// Header holds all the answer's headers.
	Header http.Header
	// Attempts is how many attempts the call made, the first included.
	Attempts int
}

func (e *Error) Error() string {
	id := ""
	if e.RequestID != "" {
		id = " (request " + e.RequestID + ")"
	}
	if e.Code == "" {
		return "petstore: " + e.Message + id
	}
	return fmt.Sprintf("petstore: %d %s: %s%s", e.StatusCode, e.Code, e.Message, id)
}

// ErrorCode is the code of an Error body, one of the service's catalogue
// (docs/api.md, "Error codes").
type ErrorCode string

// The catalogue of error codes.
const (
	CodeInvalidRequest       ErrorCode = "invalid_request"        // 400: a parameter, the body or the Idempotency-Key breaks a rule; Message says which
	CodeUnauthorized         ErrorCode = "unauthorized"           // 401: the API key is missing, unknown, revoked or expired
	CodeInsufficientScope    ErrorCode = "insufficient_scope"     // 403: the API key may not make this call; see Scope. Nothing happened
	CodeNotFound             ErrorCode = "not_found"              // 404: no pet has the id
	CodeMethodNotAllowed     ErrorCode = "method_not_allowed"     // 405: not sent by this client
	CodeGone                 ErrorCode = "gone"                   // 410: GetPet after its sunset, 5 December 2030
	CodePayloadTooLarge      ErrorCode = "payload_too_large"      // 413: a body over 64 KiB
	CodeUnsupportedMediaType ErrorCode = "unsupported_media_type" // 415: not sent by this client
	CodeIdempotencyKeyReused ErrorCode = "idempotency_key_reused" // 422: the Idempotency-Key was used with another pet
	CodeRateLimitExceeded    ErrorCode = "rate_limit_exceeded"    // 429: over a rate limit; see RetryAfter
	CodeAPIKeyBanned         ErrorCode = "api_key_banned"         // 429: the key is banned for a while; see RetryAfter
	CodeInternalError        ErrorCode = "internal_error"         // 500: a failure inside the service
	CodeNotLeader            ErrorCode = "not_leader"             // 503: cluster mode: no leader reachable now; retry
	CodeNotShipped           ErrorCode = "not_shipped"            // 503: cluster mode with --cluster-sync: stored, not yet copied to the replica; retry
)

// errorFrom reads an answer whose status is not the one asked for.
func (c *Client) errorFrom(resp *response, a Answer) *Error {
	var shaped struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Status  int    `json:"status"`
	}
	if isJSON(resp.header) && json.Unmarshal(resp.body, &shaped) == nil &&
		shaped.Code != "" && shaped.Message != "" && shaped.Status == resp.status {
		e := &Error{StatusCode: resp.status, Code: ErrorCode(shaped.Code), Message: shaped.Message, RateLimit: a.RateLimit,
			RequestID: a.RequestID, Header: resp.header, Attempts: a.Attempts}
		e.RetryAfter, _ = retryAfter(resp.status, resp.header, time.Now())
		if e.Code == CodeInsufficientScope {
			e.Scope = challengeParam(resp.header.Get("WWW-Authenticate"), "scope")
		}
		return e
	}
	return c.notTheAPI(resp, a)
}

// challengeParam is the quoted parameter name of a bearer challenge
// (RFC 6750: Bearer error="insufficient_scope", scope="pets:write"), or "".
func challengeParam(challenge, name string) string {
	_, params, ok := strings.Cut(challenge, " ")
	if !ok {
		return ""
	}
	for param := range strings.SplitSeq(params, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(param), "=")
		if ok && strings.EqualFold(key, name) {
			return strings.Trim(value, `"`)
		}
	}
	return ""
}

// notTheAPI is the Error for an answer that is not the API's JSON: it names
// the request, the status, the media type and the start of the body, and
// asks about the base URL when the status is one a wrong base URL gives
// (wrongBase).
func (c *Client) notTheAPI(resp *response, a Answer) *Error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s answered %s", resp.method, resp.url.Redacted(), resp.statusText)
	if ct := resp.header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, " (%s)", ct)
	}
	b.WriteString(", which is not the API's JSON")
	if text := snippet(resp.body); text != "" {
		b.WriteString(": " + text)
	}
	if wrongBase(resp.status) {
		fmt.Fprintf(&b, "; is %s the API's base URL?", strings.TrimSuffix(c.base.String(), "/"))
	}
	e := &Error{StatusCode: resp.status, Message: b.String(), RateLimit: a.RateLimit, RequestID: a.RequestID,
		Header: resp.header, Attempts: a.Attempts}
	e.RetryAfter, _ = retryAfter(resp.status, resp.header, time.Now())
	return e
}

// snippet is the start of a body, on one line of printable characters, for
// an error message.
func snippet(body []byte) string {
	const max = 120
	text := strings.Join(strings.FieldsFunc(string(body), func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }), " ")
	if r := []rune(text); len(r) > max {
		text = string(r[:max]) + "…"
	}
	return text
}

// wrongBase tells whether an answer with this status, not the API's JSON,
// likely comes from a wrong base URL: another site's page (a success or a
// redirect), a path nothing serves (404, 410), or one that serves only
// reading, such as a static site or PocketBase's catch-all, refusing a POST
// (405, 501).
func wrongBase(status int) bool {
	switch {
	case status < 400:
		return true
	case status == http.StatusNotFound, status == http.StatusGone,
		status == http.StatusMethodNotAllowed, status == http.StatusNotImplemented:
		return true
	}
	return false
}

// NetworkError ends a call that got no answer it could use: the last
// attempt's connection failed, was reset, or broke while the answer was
// read, and no attempt is left (or a retry cannot mend it, or the request
// may not be retried: a POST without an Idempotency-Key).
type NetworkError struct {
	Method   string // the request's method
	URL      string // the request's URL, any password in it redacted
	Attempts int    // the attempts the call made, the first included
	// RequestID is the Request-Id of the last answer an earlier attempt
	// got (a 503, say), "" when none came.
	RequestID string
	Err       error // the last attempt's error
}

func (e *NetworkError) Error() string {
	return fmt.Sprintf("petstore client: %s %s: no answer after %d %s: %v%s", e.Method, e.URL, e.Attempts, plural(e.Attempts, "attempt"), e.Err, lastRequest(e.RequestID))
}

func (e *NetworkError) Unwrap() error { return e.Err }

// TimeoutError ends a call whose deadline passed: Options.Timeout (or
// WithTimeout), the context's, or, with Attempt, the last attempt's
// (Options.AttemptTimeout) when no attempt was left. errors.Is(err,
// context.DeadlineExceeded) is true of it.
type TimeoutError struct {
	Method   string // the request's method
	URL      string // the request's URL, any password in it redacted
	Attempts int    // the attempts the call made, the first included
	// RequestID is the Request-Id of the last answer an attempt got, ""
	// when none came.
	RequestID string
	// Attempt tells that the last attempt's own timeout passed, not the
	// call's.
	Attempt bool
	Err     error // what the attempt under way failed with, if one was
}

func (e *TimeoutError) Error() string {
	what := "the call's deadline passed"
	if e.Attempt {
		what = "the last attempt timed out"
	}
	return fmt.Sprintf("petstore client: %s %s: %s after %d %s%s", e.Method, e.URL, what, e.Attempts, plural(e.Attempts, "attempt"), lastRequest(e.RequestID))
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout tells that the error is a timeout, as net.Error's does.
func (e *TimeoutError) Timeout() bool { return true }

func (e *TimeoutError) Unwrap() error { return e.Err }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func lastRequest(id string) string {
	if id == "" {
		return ""
	}
	return " (last request " + id + ")"
}
