// Package idempotency lets a client retry a create safely
// (draft-ietf-httpapi-idempotency-key-header-07): the first final answer to
// a request carrying an Idempotency-Key is remembered for a day, per API key,
// and replayed to every retry of that request.
package idempotency

import (
	"errors"
	"net/http"
	"strings"
)

// Header is the request header that names a request for retries.
const Header = "Idempotency-Key"

// MaxKeyLen is the longest key accepted, in characters.
const MaxKeyLen = 255

var (
	// ErrKeyRepeated: the header was sent more than once.
	ErrKeyRepeated = errors.New("idempotency: the key header is repeated")
	// ErrKeyMalformed: the value is not 1 to MaxKeyLen visible ASCII
	// characters, bare or as a quoted string.
	ErrKeyMalformed = errors.New("idempotency: the key is malformed")
)

// KeyFrom reads the request's Idempotency-Key: "" when there is none. The
// draft defines the value as a Structured Field string ("abc"); most APIs
// take it bare (abc). Both name the same key, abc. Within quotes, \" and \\
// stand for " and \.
func KeyFrom(h http.Header) (string, error) {
	values := h.Values(Header)
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", ErrKeyRepeated
	}
	v := values[0]
	if len(v) > 0 && v[0] == '"' {
		var ok bool
		if v, ok = unquote(v); !ok {
			return "", ErrKeyMalformed
		}
	}
	if len(v) == 0 || len(v) > MaxKeyLen || strings.IndexFunc(v, notVisibleASCII) >= 0 {
		return "", ErrKeyMalformed
	}
	return v, nil
}

// unquote decodes a Structured Field string (RFC 8941, section 3.3.3).
func unquote(s string) (string, bool) {
	if s[len(s)-1] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s)-1 || (s[i] != '"' && s[i] != '\\') {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func notVisibleASCII(r rune) bool { return r < 0x21 || r > 0x7e }
