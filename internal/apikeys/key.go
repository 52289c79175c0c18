// Package apikeys issues, stores and checks the bearer API keys of /v1.
package apikeys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"regexp"
)

// Prefix starts every key so that people and secret scanners recognise one.
const Prefix = "pet_"

// displayLen is how much of a key is kept in clear to tell keys apart.
const displayLen = len(Prefix) + 8

// keyPattern is Prefix plus 256 bits in unpadded base64url, a subset of RFC
// 6750's token alphabet.
var keyPattern = regexp.MustCompile(`^` + Prefix + `[A-Za-z0-9_-]{43}$`)

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

// wellFormed reports whether s has the shape of a key; anything else cannot
// be one and needs no lookup.
func wellFormed(s string) bool {
	return keyPattern.MatchString(s)
}
