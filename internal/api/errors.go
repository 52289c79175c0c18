package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"
)

// The catalogue of Error codes. Every /v1 error body carries exactly one of
// these; docs/api.md lists them for clients.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnauthorized         = "unauthorized"
	CodeInsufficientScope    = "insufficient_scope"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeGone                 = "gone"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	CodeRateLimitExceeded    = "rate_limit_exceeded"
	CodeAPIKeyBanned         = "api_key_banned"
	CodeInternalError        = "internal_error"
	CodeNotLeader            = "not_leader"
	CodeNotShipped           = "not_shipped"
)

// Codes is the whole catalogue; the OpenAPI document's Error.code lists
// exactly these (checked by the openapi package's tests).
var Codes = []string{
	CodeInvalidRequest, CodeUnauthorized, CodeInsufficientScope, CodeNotFound, CodeMethodNotAllowed, CodeGone, CodePayloadTooLarge,
	CodeUnsupportedMediaType, CodeIdempotencyKeyReused, CodeRateLimitExceeded, CodeAPIKeyBanned, CodeInternalError, CodeNotLeader,
	CodeNotShipped,
}

// Error is the spec's Error body. Handlers and middleware return it as an
// error; errorBody writes it.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Status: status}
}

func invalidRequest(format string, args ...any) *Error {
	return newError(http.StatusBadRequest, CodeInvalidRequest, format, args...)
}

// genericErrors give the code and message for errors that come from
// PocketBase's own machinery (catch-all 404, body limit, panic recovery) or
// from failures whose details must stay in the server log.
var genericErrors = map[int]*Error{
	http.StatusBadRequest:            {CodeInvalidRequest, "The request is not valid.", http.StatusBadRequest},
	http.StatusNotFound:              {CodeNotFound, "No such resource.", http.StatusNotFound},
	http.StatusRequestEntityTooLarge: {CodePayloadTooLarge, "The request body is larger than 64 KiB.", http.StatusRequestEntityTooLarge},
	http.StatusTooManyRequests:       {CodeRateLimitExceeded, "Too many requests.", http.StatusTooManyRequests},
	http.StatusInternalServerError:   {CodeInternalError, "Internal error; it has been logged.", http.StatusInternalServerError},
}

// statusOf is the status the request is answered with, err being what its
// chain returned: the status written, else the one errorBody writes for err.
func statusOf(e *core.RequestEvent, err error) int {
	if status := e.Status(); status != 0 {
		return status
	}
	if err != nil {
		return asError(err).Status
	}
	return http.StatusOK
}

// asError turns any error reaching the top of a /v1 route into an Error.
// PocketBase's ApiErrors keep their status but get our code and a fixed
// message; anything else is an internal error.
func asError(err error) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	status := http.StatusInternalServerError
	var pbErr *router.ApiError
	switch {
	case errors.Is(err, apis.ErrRequestEntityTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.As(err, &pbErr):
		status = pbErr.Status
	}
	if generic, ok := genericErrors[status]; ok {
		return generic
	}
	if status >= 400 && status < 500 {
		return &Error{CodeInvalidRequest, http.StatusText(status) + ".", status}
	}
	return genericErrors[http.StatusInternalServerError]
}
