// Package apikeys issues, stores and checks the bearer API keys of /v1.
package apikeys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Prefix starts every key so that people and secret scanners recognise one.
const Prefix = "pet_"

// displayLen is how much of a key is kept in clear to tell keys apart.
const displayLen = len(Prefix) + 8

// keyLen is a key's length: Prefix plus 256 bits in unpadded base64url.
const keyLen = len(Prefix) + 43

// Generate returns a new random key.
func Generate() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return Prefix + base64.RawURLEncoding.EncodeToString(b)
}

// Hash is what the api_keys collection stores instead of the key.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix is the part of a key that may be shown after creation.
func DisplayPrefix(key string) string {
	return key[:displayLen]
}

// wellFormed reports whether s has the shape of a key, Prefix plus 43
// characters of base64url's alphabet (a subset of RFC 6750's token
// alphabet); anything else cannot be one and needs no lookup. It runs on
// every /v1 request, so it is a loop over bytes, not a regular expression.
func wellFormed(s string) bool {
	if len(s) != keyLen || !strings.HasPrefix(s, Prefix) {
		return false
	}
	for i := len(Prefix); i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
