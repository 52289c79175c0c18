// Package fielderr is the one type of a refusal by the rules of the data:
// the field it is about, a sentence that says why, and its kind. The
// packages that keep the rules (apikeys, categories, customers, pets,
// webhooks, rollgrace, backup) return it; each edge shows it in its own
// shape, in one place each: the staff API (internal/staff), the command
// line (the message as it is), and PocketBase's records API and dashboard,
// through As. Both HTTP edges answer a kind with one status, Kind.Status.
package fielderr

import (
	"fmt"
	"net/http"

	validation "github.com/pocketbase/ozzo-validation/v4"
	"github.com/pocketbase/pocketbase/tools/router"
)

// Kind is a kind of refusal: errors.Is(err, kind) tells it.
type Kind struct {
	// Code names the kind where an answer in PocketBase's shape lists the
	// field under data (for example validation_api_key_rule).
	Code string
	// Conflict: the data's present state rules the change out (a revoked
	// key cannot be rolled, a category that pets carry cannot be deleted,
	// a name is taken), rather than the value given being wrong.
	Conflict bool
}

func (k *Kind) Error() string { return k.Code }

// Status is the HTTP status of a refusal of this kind, at every edge:
// 409 for a conflict, 400 for any other.
func (k *Kind) Status() int {
	if k.Conflict {
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// Error is a refusal of a value of Field, or of the whole change when
// Field is "". Message is a sentence for people that callers show as it
// is; an edge may capitalise it and end it with a full stop.
type Error struct {
	Field   string
	Message string
	Kind    *Kind
}

// New is a refusal of kind about field, its message formatted.
func New(kind *Kind, field, format string, a ...any) *Error {
	return &Error{Field: field, Message: fmt.Sprintf(format, a...), Kind: kind}
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == error(e.Kind) }

// As gives PocketBase the answer to a record it refuses, which its records
// API and its error handler look for with errors.As: the kind's Status
// with the message and, under data, the field with the kind's code and the same message,
// where the dashboard shows it beside the field.
func (e *Error) As(target any) bool {
	answer, ok := target.(**router.ApiError)
	if !ok {
		return false
	}
	var data any
	if e.Field != "" {
		data = validation.Errors{e.Field: validation.NewError(e.Kind.Code, e.Message)}
	}
	*answer = router.NewApiError(e.Kind.Status(), e.Message, data)
	return true
}
