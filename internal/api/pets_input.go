package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/apis"

	"petstore/internal/idempotency"
	"petstore/internal/pets"
	"petstore/internal/strictinput"
)

// This file holds every parser of client input for the pets operations.

// listPets' limit (spec, Pagination limit).
const (
	defaultLimit = 20
	maxLimit     = 100
)

var petIDPattern = regexp.MustCompile("^" + pets.IDPattern + "$")

// parseListQuery reads listPets' raw query string. Unknown, repeated or
// malformed parameters are refused: a misspelt filter must not silently
// return everything.
func parseListQuery(rawQuery string) (pets.Query, *Error) {
	lq := pets.Query{Limit: defaultLimit}
	q, qerr := parseQuery(rawQuery)
	if qerr != nil {
		return lq, qerr
	}
	for name, values := range q {
		if len(values) > 1 {
			return lq, invalidRequest("Query parameter %q must be given at most once.", name)
		}
		v := values[0]
		switch name {
		case "limit":
			n, lerr := parseLimit(v)
			if lerr != nil {
				return lq, lerr
			}
			lq.Limit = n
		case "status":
			if !slices.Contains(pets.Statuses, v) {
				return lq, invalidRequest("status must be one of %s.", strings.Join(pets.Statuses, ", "))
			}
			lq.Status = v
		case "cursor":
			after, ok := decodeCursor(v)
			if !ok {
				return lq, invalidRequest("cursor is not valid: use the one from the Link header of the previous page.")
			}
			lq.After = after
		default:
			return lq, unknownParameter(name, "limit, status, cursor")
		}
	}
	return lq, nil
}

// parseLimit reads the limit of a list operation (spec, Pagination limit).
func parseLimit(v string) (int, *Error) {
	n, err := strictinput.PositiveDecimal(v)
	if err != nil || n > maxLimit {
		return 0, invalidRequest("limit must be an integer from 1 to %d.", maxLimit)
	}
	return int(n), nil
}

// noQuery refuses query parameters on operations that take none.
func noQuery(rawQuery string) *Error {
	q, err := parseQuery(rawQuery)
	if err != nil {
		return err
	}
	for name := range q {
		return unknownParameter(name, "none")
	}
	return nil
}

// parseQuery parses a raw query string whole, as strictinput.ParseQuery.
func parseQuery(rawQuery string) (url.Values, *Error) {
	q, err := strictinput.ParseQuery(rawQuery)
	if err != nil {
		return nil, invalidRequest(`The query string is malformed: it has an invalid %%-escape, a ";" or more than 10000 parameters.`)
	}
	return q, nil
}

func unknownParameter(name, known string) *Error {
	return invalidRequest("Unknown query parameter %q (accepted: %s).", name, known)
}

// parsePetID reads getPet's path parameter, an int64 in plain decimal as
// the spec declares it. An int64 outside the ids the service assigns (1 to
// pets.MaxID) names no pet: assignable is false, and the answer is 404
// without a read.
func parsePetID(s string) (id string, assignable bool, _ *Error) {
	n, err := strictinput.Decimal(s)
	if err != nil {
		return "", false, invalidRequest("petId must be a whole number in plain decimal (no plus sign, no leading zero) from %d to %d.", math.MinInt64, math.MaxInt64)
	}
	return s, n >= 1 && n <= pets.MaxID, nil
}

const cursorVersion = "1:"

// encodeCursor makes the opaque cursor of the page after the pet with id.
func encodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + id))
}

func decodeCursor(s string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", false
	}
	id, ok := strings.CutPrefix(string(raw), cursorVersion)
	if !ok || !petIDPattern.MatchString(id) {
		return "", false
	}
	return id, true
}

// requireJSONContentType refuses bodies that are not declared as JSON.
func requireJSONContentType(r *http.Request) *Error {
	switch strictinput.CheckJSONContentType(r.Header.Get("Content-Type")) {
	case strictinput.ErrNotJSON:
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"Content-Type must be application/json.")
	case strictinput.ErrNotUTF8:
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"The body must be UTF-8 JSON.")
	}
	return nil
}

// readBody reads at most maxBodyBytes of the request body.
func readBody(r *http.Request) ([]byte, error) {
	body, err := strictinput.ReadBody(r.Body, maxBodyBytes)
	switch {
	case errors.Is(err, strictinput.ErrTooLarge):
		return nil, apis.ErrRequestEntityTooLarge
	case err != nil:
		return nil, invalidRequest("The request body could not be read.")
	}
	return body, nil
}

// decodeNewPet reads createPet's body strictly: one JSON object, no unknown,
// repeated or server-assigned fields, nothing after it.
func decodeNewPet(body []byte) (pets.NewPet, *Error) {
	var np pets.NewPet
	if len(bytes.TrimSpace(body)) == 0 {
		return np, invalidRequest("A request body is required: a NewPet JSON object.")
	}
	fields, derr := decodeObject(body)
	if derr != nil {
		return np, derr
	}

	for name := range fields {
		switch name {
		case "name", "categoryId", "status":
		case "id":
			return np, invalidRequest("id is assigned by the service and must not be sent.")
		default:
			return np, invalidRequest("Unknown field %q (accepted: name, categoryId, status).", name)
		}
	}

	raw, ok := fields["name"]
	if !ok {
		return np, invalidRequest("name is required.")
	}
	if json.Unmarshal(raw, &np.Name) != nil || string(raw) == "null" {
		return np, invalidRequest("name must be a string.")
	}
	np.Name = pets.Name(np.Name)
	switch n := utf8.RuneCountInString(np.Name); {
	case n == 0:
		return np, invalidRequest("name must not be empty or only spaces.")
	case n > pets.MaxNameLen:
		return np, invalidRequest("name must be at most %d characters.", pets.MaxNameLen)
	case strings.ContainsFunc(np.Name, strictinput.Unprintable):
		return np, invalidRequest("name must not contain control, text-direction or invisible characters (newline, U+202E, U+200B and the like).")
	}

	raw, ok = fields["categoryId"]
	if !ok || string(raw) == "null" {
		return np, invalidRequest("categoryId is required.")
	}
	n, integer, inRange := strictinput.Integer(raw, pets.MaxCategoryID)
	switch {
	case !integer:
		return np, invalidRequest("categoryId must be an integer.")
	case !inRange:
		return np, invalidRequest("categoryId must be from 1 to %d.", pets.MaxCategoryID)
	}
	np.CategoryID = n

	if raw, ok = fields["status"]; ok {
		if json.Unmarshal(raw, &np.Status) != nil || !slices.Contains(pets.Statuses, np.Status) {
			return np, invalidRequest("status must be one of %s.", strings.Join(pets.Statuses, ", "))
		}
	}
	return np, nil
}

// decodeObject splits a JSON object into its members' raw values, refusing
// anything but exactly one object with distinct member names.
func decodeObject(body []byte) (map[string]json.RawMessage, *Error) {
	fields, err := strictinput.ReadObject(body)
	var (
		syntax   *strictinput.SyntaxError
		repeated *strictinput.RepeatedError
	)
	switch {
	case err == nil:
		return fields, nil
	case errors.Is(err, strictinput.ErrInvalidUTF8):
		return nil, invalidRequest("The request body is not valid UTF-8.")
	case errors.As(err, &syntax):
		return nil, invalidRequest("The request body is not valid JSON: %s.", jsonErrorText(syntax.Err))
	case errors.As(err, &repeated):
		return nil, invalidRequest("Field %q appears more than once.", repeated.Name)
	case errors.Is(err, strictinput.ErrNotObject):
		return nil, invalidRequest("The request body must be a JSON object.")
	}
	return nil, invalidRequest("The request body must hold one JSON object and nothing after it.")
}

// jsonErrorText describes a decoding error without Go type names.
func jsonErrorText(err error) string {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends too early"
	}
	return "it cannot be parsed"
}

// idempotencyKeyError is the 400 for an Idempotency-Key header that
// idempotency.KeyFrom refused.
func idempotencyKeyError(err error) *Error {
	if errors.Is(err, idempotency.ErrKeyRepeated) {
		return invalidRequest("%s must be sent at most once.", idempotency.Header)
	}
	return invalidRequest(`%s must be 1 to %d visible ASCII characters, bare (abc) or as a quoted string ("abc").`,
		idempotency.Header, idempotency.MaxKeyLen)
}
