package api

import (
	"net/http"
	"regexp"
	"testing"
)

// The oracle for bearerToken, written independently of it: one
// Authorization header holding the scheme "Bearer" in any case, one or more
// spaces and a token free of spaces, tabs and commas (RFC 6750 section 2.1,
// with a looser token) is accepted; a Bearer scheme with anything else is an
// invalid key; no header or another scheme carries no key at all.
var (
	bearerCredential = regexp.MustCompile(`^(?i:bearer) +([^ \t,]+)$`)
	bearerScheme     = regexp.MustCompile(`^(?i:bearer)(?: |$)`)
)

func FuzzBearerToken(f *testing.F) {
	if token, err := bearerToken(http.Header{}); token != "" || err != errKeyMissing {
		f.Fatalf("no Authorization header: %q, %v; want errKeyMissing", token, err)
	}
	for _, seed := range []struct {
		value  string
		second bool
	}{
		{"Bearer pet_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG", false},
		{"bearer   pet_x", false},
		{"Bearer pet_x", true},
		{"Basic x", true},
		{"Bearer", false},
		{"Bearer ", false},
		{"Bearer a b", false},
		{"Bearer a,b", false},
		{"Bearer\ta", false},
		{"Bearerx a", false},
		{"Basic dXNlcjpwYXNz", false},
		{"Basic x, Bearer pet_x", false},
		{"Bearer pet_x, Basic x", false},
		{"", false},
	} {
		f.Add(seed.value, seed.second)
	}
	f.Fuzz(func(t *testing.T, value string, second bool) {
		h := http.Header{}
		h.Add("Authorization", value)
		if second {
			h.Add("Authorization", value)
		}
		var want string
		var wantErr *Error
		switch m := bearerCredential.FindStringSubmatch(value); {
		case second: // two headers: which one would be the key?
			wantErr = errKeyInvalid
		case m != nil:
			want = m[1]
		case bearerScheme.MatchString(value):
			wantErr = errKeyInvalid
		default:
			wantErr = errKeyMissing
		}
		if token, err := bearerToken(h); token != want || err != wantErr {
			t.Fatalf("Authorization %q (twice: %v): token %q, error %v; want %q, %v", value, second, token, err, want, wantErr)
		}
	})
}
