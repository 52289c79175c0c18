package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/apis"

	"petstore/internal/idempotency"
	"petstore/internal/pets"
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
			n, err := parsePositiveDecimal(v)
			if err != nil || n > maxLimit {
				return lq, invalidRequest("limit must be an integer from 1 to %d.", maxLimit)
			}
			lq.Limit = int(n)
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

// parseQuery parses a raw query string whole. url.URL.Query would silently
// drop a pair with a bad escape or a ";", and every pair beyond
// url.ParseQuery's cap of 10000.
func parseQuery(rawQuery string) (url.Values, *Error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, invalidRequest(`The query string is malformed: it has an invalid %%-escape, a ";" or more than 10000 parameters.`)
	}
	return q, nil
}

func unknownParameter(name, known string) *Error {
	return invalidRequest("Unknown query parameter %q (accepted: %s).", name, known)
}

var errNotPositiveDecimal = errors.New("not a positive decimal integer")

// parsePositiveDecimal accepts 1..MaxInt64 written in plain decimal: no sign,
// no leading zero, no spaces (strconv would take "+5"; cast would read "010"
// as octal).
func parsePositiveDecimal(s string) (int64, error) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, errNotPositiveDecimal
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errNotPositiveDecimal
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// parsePetID reads getPet's path parameter. A positive int64 that is not an
// id the service would assign is simply not found.
func parsePetID(s string) (string, *Error) {
	if _, err := parsePositiveDecimal(s); err != nil {
		return "", invalidRequest("petId must be a positive decimal integer, at most %d.", int64(math.MaxInt64))
	}
	return s, nil
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
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"Content-Type must be application/json.")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return newError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"The body must be UTF-8 JSON.")
	}
	return nil
}

// readBody reads at most maxBodyBytes of the request body. PocketBase's body
// limit misses the excess when it arrives in the same read as the end of a
// chunked body, so the length is checked here too.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	switch {
	case errors.Is(err, apis.ErrRequestEntityTooLarge) || len(body) > maxBodyBytes:
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
	if !utf8.Valid(body) {
		return np, invalidRequest("The request body is not valid UTF-8.")
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
	case strings.ContainsFunc(np.Name, unicode.IsControl):
		return np, invalidRequest("name must not contain control characters.")
	}

	raw, ok = fields["categoryId"]
	if !ok || string(raw) == "null" {
		return np, invalidRequest("categoryId is required.")
	}
	n, integer, inRange := integerValue(raw, pets.MaxCategoryID)
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

// integerValue reads a JSON value as the integer it denotes, as JSON Schema
// does: a number without a fractional part, however it is written (7, 7.0,
// 0.7e1 and 700e-2 are all 7). integer is false for anything else; inRange
// is whether an integer is from 1 to largest. The value is computed exactly from
// its decimal digits, never through a float: 1.0000000000000001 is not an
// integer, and an exponent of any size costs nothing.
func integerValue(raw []byte, largest int64) (n int64, integer, inRange bool) {
	num := string(raw)
	if num == "" || (num[0] != '-' && (num[0] < '0' || num[0] > '9')) {
		return 0, false, false // not a number (the decoder checked the JSON grammar)
	}
	negative := num[0] == '-'
	mantissa, exponent := strings.TrimPrefix(num, "-"), ""
	if i := strings.IndexAny(mantissa, "eE"); i >= 0 {
		mantissa, exponent = mantissa[:i], mantissa[i+1:]
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	// The value is digits × 10^scale.
	digits := strings.TrimLeft(whole+fraction, "0")
	scale := -int64(len(fraction))
	if exponent != "" {
		// Beyond ±2^31 an exponent is as good as infinite either way (a body
		// holds at most maxBodyBytes digits), and the bound keeps the sums
		// below from overflowing.
		e, err := strconv.ParseInt(exponent, 10, 64)
		if err != nil || e > math.MaxInt32 || e < math.MinInt32 {
			e = math.MaxInt32
			if exponent[0] == '-' {
				e = math.MinInt32
			}
		}
		scale += e
	}
	if digits == "" {
		return 0, true, false // zero
	}
	trimmed := strings.TrimRight(digits, "0")
	scale += int64(len(digits) - len(trimmed))
	digits = trimmed
	if scale < 0 {
		return 0, false, false // its last non-zero digit is after the point
	}
	if negative || int64(len(digits))+scale > int64(len(strconv.FormatInt(largest, 10))) {
		return 0, true, false
	}
	n, err := strconv.ParseInt(digits+strings.Repeat("0", int(scale)), 10, 64)
	if err != nil || n > largest {
		return 0, true, false
	}
	return n, true, true
}

// decodeObject splits a JSON object into its members' raw values, refusing
// anything but exactly one object with distinct member names.
func decodeObject(body []byte) (map[string]json.RawMessage, *Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	notJSON := func(err error) *Error {
		return invalidRequest("The request body is not valid JSON: %s.", jsonErrorText(err))
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, notJSON(err)
	}
	if tok != json.Delim('{') {
		return nil, invalidRequest("The request body must be a JSON object.")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		name := tok.(string) // inside an object, json.Decoder yields names as strings
		if _, dup := fields[name]; dup {
			return nil, invalidRequest("Field %q appears more than once.", name)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, notJSON(err)
		}
		fields[name] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidRequest("The request body must hold one JSON object and nothing after it.")
	}
	return fields, nil
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
