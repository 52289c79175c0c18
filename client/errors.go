package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error is a refusal or failure answered by the service. Code is one of the
// ErrorCode constants (the service's code catalogue), or empty when the
// answer was not the service's Error body (e.g. a proxy's 502 page).
type Error struct {
	StatusCode int
	Code       ErrorCode
	Message    string
	// RetryAfter is the answer's Retry-After (429, 503), 0 when absent: the
	// call did not wait for it (see Options.MaxRetryAfter), or ran out of
	// attempts.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("petstore: %d %s", e.StatusCode, e.Message)
	}
	return fmt.Sprintf("petstore: %d %s: %s", e.StatusCode, e.Code, e.Message)
}

// errorFrom reads a non-success answer.
func errorFrom(resp *http.Response, body []byte) *Error {
	e := &Error{StatusCode: resp.StatusCode}
	e.RetryAfter, _ = retryAfter(resp, time.Now())
	var shaped struct {
		Code    ErrorCode `json:"code"`
		Message string    `json:"message"`
	}
	if json.Unmarshal(body, &shaped) == nil && shaped.Code.Valid() {
		e.Code, e.Message = shaped.Code, shaped.Message
		return e
	}
	e.Message = http.StatusText(resp.StatusCode)
	if text := strings.TrimSpace(string(body)); text != "" && len(text) <= 200 {
		e.Message += ": " + text
	}
	return e
}

// nextLink is the target of the rel="next" link of Link header values
// (RFC 8288), or "". The service sends one link; this reads any number.
func nextLink(values []string) string {
	for _, v := range values {
		for v != "" {
			start, end := strings.IndexByte(v, '<'), strings.IndexByte(v, '>')
			if start < 0 || end < start {
				break
			}
			target := v[start+1 : end]
			params, rest, _ := strings.Cut(v[end+1:], ",")
			for param := range strings.SplitSeq(params, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
				if strings.EqualFold(name, "rel") && relHasNext(strings.Trim(value, `"`)) {
					return target
				}
			}
			v = rest
		}
	}
	return ""
}

func relHasNext(rel string) bool {
	for r := range strings.FieldsSeq(rel) {
		if strings.EqualFold(r, "next") {
			return true
		}
	}
	return false
}
