package staff

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	validation "github.com/pocketbase/ozzo-validation/v4"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/apikeys"
	"petstore/internal/fielderr"
	"petstore/internal/rollgrace"
	"petstore/internal/strictinput"
)

// The request bodies. Pointers tell "not sent" from zero.
type (
	createRequest struct {
		Plan      string       `json:"plan"`
		Name      string       `json:"name"`
		PerMinute int          `json:"perMinute"` // 0: the plan's
		PerDay    int          `json:"perDay"`    // 0: the plan's
		Expires   nullableTime `json:"expires"`   // RFC 3339; null: never
		Scopes    *[]string    `json:"scopes"`    // not sent: every scope
	}
	changeRequest struct {
		Name      *string      `json:"name"`
		Plan      *string      `json:"plan"`
		PerMinute *int         `json:"perMinute"`
		PerDay    *int         `json:"perDay"`
		Expires   nullableTime `json:"expires"` // RFC 3339; null: never expires
		Scopes    *[]string    `json:"scopes"`
	}
	// rollRequest is the body of a roll, a key's or a webhook endpoint's.
	rollRequest struct {
		GraceSeconds *int64 `json:"graceSeconds"` // not sent: rollgrace.Default
	}
)

// nullableTime is a member that is an RFC 3339 time or null (the zero
// time: never), the one kind of member that may be null. Sent tells it
// from a member left out.
type nullableTime struct {
	time.Time
	Sent bool
}

func (t *nullableTime) UnmarshalJSON(data []byte) error {
	t.Sent = true
	if string(data) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if json.Unmarshal(data, &s) == nil {
		if parsed, err := time.Parse(time.RFC3339, s); err == nil {
			t.Time = parsed
			return nil
		}
	}
	return errBadTime
}

var errBadTime = errors.New("an RFC 3339 time such as 2027-01-31T00:00:00Z, or null")

func (c createRequest) newKey() (apikeys.NewKey, error) {
	nk := apikeys.NewKey{Plan: c.Plan, Name: c.Name, PerMinute: c.PerMinute, PerDay: c.PerDay}
	nk.Expires = c.Expires.Time
	if c.Scopes != nil {
		scopes, err := apikeys.ParseScopes(*c.Scopes)
		if err != nil {
			return nk, storeError(err)
		}
		nk.Scopes = scopes
	}
	return nk, nil
}

func (c changeRequest) changes() (apikeys.Changes, error) {
	if c == (changeRequest{}) {
		return apikeys.Changes{}, badRequest("nothing to change: send name, plan, perMinute, perDay, expires or scopes")
	}
	changes := apikeys.Changes{Name: c.Name, Plan: c.Plan, PerMinute: c.PerMinute, PerDay: c.PerDay}
	if c.Expires.Sent {
		changes.Expires = &c.Expires.Time
	}
	if c.Scopes != nil {
		scopes, err := apikeys.ParseScopes(*c.Scopes)
		if err != nil {
			return changes, storeError(err)
		}
		changes.Scopes = &scopes
	}
	return changes, nil
}

// grace is the roll's grace; the roll checks it (rollgrace.Check).
func (r rollRequest) grace() time.Duration { return rollgrace.FromSeconds(r.GraceSeconds) }

// decodeBody reads the request's JSON object into v (a pointer to one of
// the request structs) with strictinput.Decode, in one walk: sent as
// application/json in UTF-8, at most maxBodyBytes however it is sent
// (chunked too), one object, each member one of v's, spelled exactly so,
// given once, and null only for expires. A refusal about one member names
// it under data.
func decodeBody(e *core.RequestEvent, v any) error {
	switch strictinput.CheckJSONContentType(e.Request.Header.Get("Content-Type")) {
	case strictinput.ErrNotJSON:
		return router.NewApiError(http.StatusUnsupportedMediaType, "The body must be JSON, sent as Content-Type: application/json.", nil)
	case strictinput.ErrNotUTF8:
		return router.NewApiError(http.StatusUnsupportedMediaType, "The body must be UTF-8 JSON.", nil)
	}
	body, err := strictinput.ReadBody(e.Request.Body, maxBodyBytes)
	if errors.Is(err, strictinput.ErrTooLarge) {
		return apis.ErrRequestEntityTooLarge
	}
	if err != nil {
		return badRequest("the body could not be read")
	}
	err = strictinput.Decode(body, v)
	var (
		unknown  *strictinput.UnknownMemberError
		repeated *strictinput.RepeatedError
		null     *strictinput.NullError
		typeErr  *strictinput.TypeError
	)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictinput.ErrInvalidUTF8):
		return badRequest("the body is not valid UTF-8")
	case errors.As(err, &unknown):
		for _, k := range unknown.Known {
			if strings.EqualFold(k, unknown.Name) {
				return memberError(unknown.Name, "validation_unknown_member", "unknown member %q: members are case-sensitive, did you mean %q?", unknown.Name, k)
			}
		}
		return memberError(unknown.Name, "validation_unknown_member", "unknown member %q: the members are %s", unknown.Name, strings.Join(unknown.Known, ", "))
	case errors.As(err, &repeated):
		return memberError(repeated.Name, "validation_repeated_member", "member %q is given more than once", repeated.Name)
	case errors.As(err, &null):
		return memberError(null.Name, "validation_null", "%s cannot be null: leave it out to keep it as it is", null.Name)
	case errors.As(err, &typeErr) && errors.Is(err, errBadTime):
		return memberError(typeErr.Name, "validation_invalid_time", "%s must be %s", typeErr.Name, errBadTime)
	case errors.As(err, &typeErr):
		return memberError(typeErr.Name, "validation_invalid_type", "%s has the wrong type", typeErr.Name)
	}
	return badRequest("the body must be one JSON object with the documented members: %s", strings.Join(strictinput.Members(v), ", "))
}

// memberError is a 400 about one member (see answer).
func memberError(member, code, format string, a ...any) error {
	return answer(http.StatusBadRequest, member, code, fmt.Sprintf(format, a...))
}

// answer is an error in PocketBase's shape: status, the message, and the
// member it is about, if any, under data with code and the same message.
func answer(status int, member, code, msg string) error {
	var data any
	if member != "" {
		data = validation.Errors{member: validation.NewError(code, msg)}
	}
	return router.NewApiError(status, msg, data)
}

// maxPerPage bounds a page of keys.
const maxPerPage = 100

// parseQuery parses a raw query string whole (strictinput.ParseQuery):
// a pair that url.URL.Query would drop is refused, not ignored.
func parseQuery(rawQuery string) (url.Values, error) {
	q, err := strictinput.ParseQuery(rawQuery)
	if err != nil {
		return nil, badRequest(`the query string is malformed: it has an invalid %%-escape, a ";" or more than 10000 parameters`)
	}
	return q, nil
}

// listQuery reads the list's query: search, state, sort, page (from 1,
// default 1) and perPage (1 to maxPerPage, default 50), each at most once.
func listQuery(rawQuery string) (apikeys.Query, error) {
	query := apikeys.Query{Page: 1, PerPage: 50}
	q, err := parseQuery(rawQuery)
	if err != nil {
		return query, err
	}
	for name, values := range q {
		if len(values) > 1 && slices.Contains([]string{"search", "state", "sort", "page", "perPage"}, name) {
			return query, badRequest("%s is given more than once", name)
		}
	}
	query.Search = q.Get("search")
	if len(query.Search) > 200 {
		return query, badRequest("search has at most 200 characters")
	}
	query.State = q.Get("state")
	if query.State != "" && !slices.Contains(apikeys.States, query.State) {
		return query, badRequest("state must be one of %s", strings.Join(apikeys.States, ", "))
	}
	query.Sort = q.Get("sort")
	if _, ok := apikeys.Sorts[query.Sort]; query.Sort != "" && !ok {
		sorts := slices.Sorted(func(yield func(string) bool) {
			for s := range apikeys.Sorts {
				if !yield(s) {
					return
				}
			}
		})
		return query, badRequest("sort must be one of %s", strings.Join(sorts, ", "))
	}
	if query.Page, err = wholeNumber(q, "page", 1, 1<<31); err != nil {
		return query, err
	}
	if query.PerPage, err = wholeNumber(q, "perPage", 50, maxPerPage); err != nil {
		return query, err
	}
	return query, nil
}

// historyQuery reads a history's query: page (from 1, default 1) and
// perPage (1 to maxPerPage, default 20), each at most once.
func historyQuery(rawQuery string) (page, perPage int, err error) {
	q, err := parseQuery(rawQuery)
	if err != nil {
		return 0, 0, err
	}
	for _, name := range []string{"page", "perPage"} {
		if len(q[name]) > 1 {
			return 0, 0, badRequest("%s is given more than once", name)
		}
	}
	if page, err = wholeNumber(q, "page", 1, 1<<31); err != nil {
		return 0, 0, err
	}
	if perPage, err = wholeNumber(q, "perPage", 20, maxPerPage); err != nil {
		return 0, 0, err
	}
	return page, perPage, nil
}

// maxChartDays is how many days the per-key chart may ask for.
const maxChartDays = 90

// parseDays reads ?days=N: 1 to maxChartDays, default 30, given once.
func parseDays(rawQuery string) (int, error) {
	q, err := parseQuery(rawQuery)
	if err != nil {
		return 0, err
	}
	if len(q["days"]) > 1 {
		return 0, badRequest("days must be a whole number from 1 to %d, given once", maxChartDays)
	}
	n, err := wholeNumber(q, "days", 30, maxChartDays)
	if err != nil {
		return 0, badRequest("days must be a whole number from 1 to %d, given once", maxChartDays)
	}
	return n, nil
}

// wholeNumber reads the query parameter name as a whole number from 1 to
// highest, written plainly (no sign, no leading zero), or def when absent.
func wholeNumber(q url.Values, name string, def, highest int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	n, err := strictinput.PositiveDecimal(q.Get(name))
	if err != nil || n > int64(highest) {
		return 0, badRequest("%s must be a whole number from 1 to %d", name, highest)
	}
	return int(n), nil
}

func badRequest(format string, a ...any) error {
	return router.NewBadRequestError(fmt.Sprintf(format, a...), nil)
}

// storeError is err as the answer to the caller: a rule's refusal as
// refusal says, a value the collection's fields refuse as 400 with each
// field under data, an unknown key as 404, an answer already made as it
// is, anything else as a 500 that PocketBase logs without showing.
func storeError(err error) error {
	var (
		refused *fielderr.Error
		fields  validation.Errors
		made    *router.ApiError
	)
	switch {
	case errors.As(err, &refused):
		return refusal(refused)
	case errors.As(err, &fields):
		var said []string
		for field, e := range fields {
			said = append(said, field+": "+e.Error())
		}
		slices.Sort(said)
		return router.NewBadRequestError(strings.Join(said, "; "), fields)
	case errors.Is(err, apikeys.ErrNotFound):
		return router.NewNotFoundError(err.Error(), nil)
	case errors.As(err, &made):
		return made
	}
	return router.NewInternalServerError("", err)
}

// memberNames are the staff API's names of the fields that refusals name,
// where they differ from the field's own.
var memberNames = map[string]string{
	apikeys.PerMinuteField: "perMinute",
	apikeys.PerDayField:    "perDay",
	rollgrace.Field:        "graceSeconds",
}

// refusal is a rule's refusal as the staff API answers it: its kind's
// status (the records API's too), its message, and the member it is about
// under data with its kind's code.
func refusal(e *fielderr.Error) error {
	member := e.Field
	if name, ok := memberNames[member]; ok {
		member = name
	}
	return answer(e.Kind.Status(), member, e.Kind.Code, e.Message)
}
