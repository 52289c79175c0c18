// Package strictinput reads client input strictly, for every HTTP layer
// (/v1 and the staff API): a bounded body, one JSON object whose members
// are walked in order, integers read exactly, and a query string parsed
// whole. It answers with typed errors and no client-facing text: each layer
// maps them to its own error shape and messages.
package strictinput

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"mime"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/apis"
)

// The refusals. A layer tells them apart with errors.Is and errors.As.
var (
	// ErrTooLarge: the body is longer than the bound.
	ErrTooLarge = errors.New("strictinput: body too large")
	// ErrUnreadable: the body could not be read (the connection failed).
	ErrUnreadable = errors.New("strictinput: body unreadable")
	// ErrNotJSON: the Content-Type is not application/json.
	ErrNotJSON = errors.New("strictinput: content type is not application/json")
	// ErrNotUTF8: the Content-Type is application/json with a charset other
	// than UTF-8.
	ErrNotUTF8 = errors.New("strictinput: charset is not utf-8")
	// ErrInvalidUTF8: the body holds bytes that are not UTF-8, which
	// encoding/json would silently read as U+FFFD.
	ErrInvalidUTF8 = errors.New("strictinput: body is not valid UTF-8")
	// ErrNotObject: the body is a JSON value other than an object.
	ErrNotObject = errors.New("strictinput: not a JSON object")
	// ErrTrailing: something follows the object.
	ErrTrailing = errors.New("strictinput: data after the object")
	// ErrMalformedQuery: the query string has an invalid %-escape, a ";" or
	// more than url.ParseQuery's 10000 pairs.
	ErrMalformedQuery = errors.New("strictinput: malformed query string")
	// ErrNotPositiveDecimal: not 1..MaxInt64 written in plain decimal.
	ErrNotPositiveDecimal = errors.New("strictinput: not a positive decimal integer")
	// ErrNotDecimal: not an int64 written in plain decimal.
	ErrNotDecimal = errors.New("strictinput: not a decimal integer")
)

// SyntaxError is a body that is not JSON; Err is encoding/json's error.
type SyntaxError struct{ Err error }

func (e *SyntaxError) Error() string { return "strictinput: not JSON: " + e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// RepeatedError is an object that names a member more than once.
type RepeatedError struct{ Name string }

func (e *RepeatedError) Error() string {
	return "strictinput: member " + strconv.Quote(e.Name) + " repeated"
}

// CheckJSONContentType checks a Content-Type header: application/json, with
// no charset or UTF-8 (ErrNotJSON, ErrNotUTF8).
func CheckJSONContentType(header string) error {
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != "application/json" {
		return ErrNotJSON
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return ErrNotUTF8
	}
	return nil
}

// ReadBody reads all of body, at most limit bytes (ErrTooLarge beyond, or
// ErrUnreadable). PocketBase's body limit misses the excess when it arrives
// in the same read as the end of a chunked body, and its body wrapper starts
// over after EOF, so that a decoder reading it could never see the end: the
// body is read whole, and its length checked here.
func ReadBody(body io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	switch {
	case errors.Is(err, apis.ErrRequestEntityTooLarge) || len(data) > limit:
		return nil, ErrTooLarge
	case err != nil:
		return nil, ErrUnreadable
	}
	return data, nil
}

// object walks one JSON object member by member: Next gives a member's name,
// Value its raw value, and Close checks that the object ends and nothing
// follows. Its errors are ErrInvalidUTF8, *SyntaxError, ErrNotObject and
// ErrTrailing.
type object struct{ dec *json.Decoder }

// openObject checks that body is UTF-8 and reads its opening brace.
func openObject(body []byte) (*object, error) {
	if !utf8.Valid(body) {
		return nil, ErrInvalidUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, &SyntaxError{err}
	}
	if tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	return &object{dec}, nil
}

// Next reads the next member's name; ok is false after the last member.
// Value must follow each name.
func (o *object) Next() (name string, ok bool, err error) {
	if !o.dec.More() {
		return "", false, nil
	}
	tok, err := o.dec.Token()
	if err != nil {
		return "", false, &SyntaxError{err}
	}
	name, _ = tok.(string) // inside an object, json.Decoder yields names as strings
	return name, true, nil
}

// Value reads the value of the member that Next named.
func (o *object) Value() (json.RawMessage, error) {
	var value json.RawMessage
	if err := o.dec.Decode(&value); err != nil {
		return nil, &SyntaxError{err}
	}
	return value, nil
}

// Close reads the closing brace and checks that nothing follows it.
func (o *object) Close() error {
	if _, err := o.dec.Token(); err != nil {
		return &SyntaxError{err}
	}
	if _, err := o.dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

// ReadObject reads body as exactly one JSON object into its members' raw
// values. A repeated name is a *RepeatedError, found before its value is
// read: encoding/json alone would keep the last one.
func ReadObject(body []byte) (map[string]json.RawMessage, error) {
	obj, err := openObject(body)
	if err != nil {
		return nil, err
	}
	members := map[string]json.RawMessage{}
	for {
		name, ok, err := obj.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if _, dup := members[name]; dup {
			return nil, &RepeatedError{name}
		}
		if members[name], err = obj.Value(); err != nil {
			return nil, err
		}
	}
	if err := obj.Close(); err != nil {
		return nil, err
	}
	return members, nil
}

// UnknownMemberError is a member that the object decoded into has no field
// for. Known are the names it has, sorted; a layer may point out the one
// that differs only in letter case.
type UnknownMemberError struct {
	Name  string
	Known []string
}

func (e *UnknownMemberError) Error() string {
	return "strictinput: unknown member " + strconv.Quote(e.Name)
}

// NullError is a member that is null although its field does not take
// null: encoding/json would read it as "not sent".
type NullError struct{ Name string }

func (e *NullError) Error() string {
	return "strictinput: member " + strconv.Quote(e.Name) + " is null"
}

// TypeError is a member whose value its field does not take; Err is
// encoding/json's error, or the field's UnmarshalJSON's.
type TypeError struct {
	Name string
	Err  error
}

func (e *TypeError) Error() string {
	return "strictinput: member " + strconv.Quote(e.Name) + ": " + e.Err.Error()
}
func (e *TypeError) Unwrap() error { return e.Err }

// Decode reads body, one JSON object, into v, a pointer to a struct, in a
// single walk: each member, named exactly as a field's JSON name (its json
// tag, else its name) and given once, is decoded into that field as it is
// read. A member may be null only if its field's type reads null itself (a
// json.Unmarshaler, such as json.RawMessage). Its errors are object's,
// *UnknownMemberError, *RepeatedError, *NullError and *TypeError, the first
// one met in the body's order. encoding/json alone would take the last of
// repeated members, match names in any letter case and read null as
// absent, so that {"PLAN":"free","plan":"pro"} would mean something other
// than what its sender may think.
func Decode(body []byte, v any) error {
	target := reflect.ValueOf(v).Elem()
	fields := memberFields(target.Type())
	obj, err := openObject(body)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for {
		name, ok, err := obj.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		i, known := fields[name]
		switch {
		case !known:
			return &UnknownMemberError{name, Members(v)}
		case seen[name]:
			return &RepeatedError{name}
		}
		seen[name] = true
		raw, err := obj.Value()
		if err != nil {
			return err
		}
		field := target.Field(i).Addr()
		if _, nullable := field.Interface().(json.Unmarshaler); string(raw) == "null" && !nullable {
			return &NullError{name}
		}
		if err := json.Unmarshal(raw, field.Interface()); err != nil {
			return &TypeError{name, err}
		}
	}
	return obj.Close()
}

// Members are the JSON names of the members Decode reads into v, sorted.
func Members(v any) []string {
	return slices.Sorted(maps.Keys(memberFields(reflect.TypeOf(v).Elem())))
}

// memberFields are the index of each field of the struct type t by its
// JSON name: its json tag, else its name; unexported fields and those
// tagged "-" have none.
func memberFields(t reflect.Type) map[string]int {
	fields := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = i
	}
	return fields
}

// ParseQuery parses a raw query string whole (ErrMalformedQuery).
// url.URL.Query would silently drop a pair with a bad escape or a ";", and
// every pair beyond url.ParseQuery's cap of 10000.
func ParseQuery(rawQuery string) (url.Values, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, ErrMalformedQuery
	}
	return q, nil
}

// PositiveDecimal accepts 1..MaxInt64 written in plain decimal: no sign, no
// leading zero, no spaces (strconv would take "+5"; cast would read "010"
// as octal).
func PositiveDecimal(s string) (int64, error) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, ErrNotPositiveDecimal
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrNotPositiveDecimal
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrNotPositiveDecimal
	}
	return n, nil
}

// Decimal accepts any int64 written in plain decimal: a minus sign for a
// negative number, no plus sign, no leading zero, no spaces, so that each
// number has one spelling.
func Decimal(s string) (int64, error) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && s != "0") {
		return 0, ErrNotDecimal
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, ErrNotDecimal
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrNotDecimal
	}
	return n, nil
}

// Integer reads a JSON number as the integer it denotes, as JSON Schema
// does: a number without a fractional part, however it is written (7, 7.0,
// 0.7e1 and 700e-2 are all 7). integer is false for anything else; inRange
// is whether an integer is from 1 to largest. The value is computed exactly
// from its decimal digits, never through a float: 1.0000000000000001 is not
// an integer, and an exponent of any size costs nothing.
func Integer(raw []byte, largest int64) (n int64, integer, inRange bool) {
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
	// The value is digits × 10^scale. Every term of scale is bounded (the
	// exponent to ±2^31, the digit counts by the length of raw), so no sum
	// below overflows.
	digits := strings.TrimLeft(whole+fraction, "0")
	scale := -int64(len(fraction))
	if exponent != "" {
		// Beyond ±2^31 an exponent is as good as infinite either way: a
		// number can only be that long in a body far beyond any bound.
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
	// Here scale is at most 19, the length of MaxInt64.
	n, err := strconv.ParseInt(digits+strings.Repeat("0", int(scale)), 10, 64)
	if err != nil || n > largest {
		return 0, true, false
	}
	return n, true, true
}

// Unprintable reports whether r would change how the text around it prints
// rather than print itself, or print nothing: a control character (NUL,
// ESC, newline ...), a line or paragraph separator, or a format character
// (category Cf: the bidirectional controls such as U+202E, the zero-width
// space U+200B, the soft hyphen U+00AD, the byte order mark U+FEFF, tag
// characters). The zero-width joiner and non-joiner (U+200D, U+200C) are
// printable here: emoji sequences and Persian and Indic words need them.
// Names and descriptions that staff and clients give hold none.
func Unprintable(r rune) bool {
	if r == '\u200c' || r == '\u200d' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
