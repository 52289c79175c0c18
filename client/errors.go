package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"petstore/client/internal/gen"
)

// Error is an answer a call could not use. Most are the service's refusals,
// with its Error body: Code is then one of the Code constants. Code is empty
// when the answer is not the API's: a proxy's error page, or what a wrong
// base URL leads to; Message then says what came, and asks about the base
// URL when that is the likely cause.
//
// Network failures and the context's errors are not Errors: they come back
// as they are (errors.Is(err, context.DeadlineExceeded) works).
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
func (c *Client) errorFrom(resp *http.Response, body []byte, rl RateLimit) *Error {
	var shaped gen.Error
	if isJSON(resp.Header) && json.Unmarshal(body, &shaped) == nil &&
		shaped.Code != "" && shaped.Message != "" && shaped.Status == resp.StatusCode {
		e := &Error{StatusCode: resp.StatusCode, Code: ErrorCode(shaped.Code), Message: shaped.Message, RateLimit: rl,
			RequestID: resp.Header.Get("Request-Id")}
		e.RetryAfter, _ = retryAfter(resp, time.Now())
		if e.Code == CodeInsufficientScope {
			e.Scope = challengeParam(resp.Header.Get("WWW-Authenticate"), "scope")
		}
		return e
	}
	return c.notTheAPI(resp, body, rl)
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
func (c *Client) notTheAPI(resp *http.Response, body []byte, rl RateLimit) *Error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s answered %s", resp.Request.Method, resp.Request.URL.Redacted(), resp.Status)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, " (%s)", ct)
	}
	b.WriteString(", which is not the API's JSON")
	if text := snippet(body); text != "" {
		b.WriteString(": " + text)
	}
	if wrongBase(resp.StatusCode) {
		fmt.Fprintf(&b, "; is %s the API's base URL?", strings.TrimSuffix(c.base, "/"))
	}
	e := &Error{StatusCode: resp.StatusCode, Message: b.String(), RateLimit: rl, RequestID: resp.Header.Get("Request-Id")}
	e.RetryAfter, _ = retryAfter(resp, time.Now())
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
