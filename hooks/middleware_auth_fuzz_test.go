package hooks

import (
	"net/http"
	"strings"
	"testing"
)

func FuzzBearerToken(f *testing.F) {
	for _, seed := range []struct {
		value  string
		second bool
	}{
		{"Bearer pet_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG", false},
		{"bearer   pet_x", false},
		{"Bearer pet_x", true},
		{"Bearer", false},
		{"Bearer ", false},
		{"Bearer a b", false},
		{"Bearer a,b", false},
		{"Bearer\ta", false},
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
		token, err := bearerToken(h)
		if err != nil {
			if err != errKeyMissing && err != errKeyInvalid {
				t.Fatalf("refusal %+v is neither errKeyMissing nor errKeyInvalid", err)
			}
			if err.Status != http.StatusUnauthorized || err.Code != CodeUnauthorized {
				t.Fatalf("refusal %+v, want 401 unauthorized", err)
			}
			if token != "" {
				t.Fatalf("refused %q but returned token %q", value, token)
			}
			return
		}
		if second {
			t.Fatalf("accepted two Authorization headers %q", value)
		}
		scheme, rest, _ := strings.Cut(value, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			t.Fatalf("accepted scheme %q", scheme)
		}
		if token == "" || strings.ContainsAny(token, " \t,") {
			t.Fatalf("accepted token %q from %q", token, value)
		}
		if strings.TrimLeft(rest, " ") != token {
			t.Fatalf("token %q is not what follows the scheme in %q", token, value)
		}
	})
}
