package atrest_test

import (
	"errors"
	"strings"
	"testing"

	"petstore/internal/atrest"
)

func mustKey(t *testing.T, s string) *atrest.Key {
	t.Helper()
	k, err := atrest.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A sealed secret opens with its key alone, never shows its plaintext, and
// differs at each seal; a plaintext passes through Open, with or without a
// key; a wrong key, no key, or a damaged or short value is an error, never a
// panic, that holds nothing of the value.
func TestSealOpen(t *testing.T) {
	a := mustKey(t, strings.Repeat("a", atrest.KeyLength))
	b := mustKey(t, strings.Repeat("b", atrest.KeyLength))
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	sealed, err := a.Seal(secret)
	if err != nil || !atrest.Sealed(sealed) || strings.Contains(sealed, "MfKQ9r8") {
		t.Fatalf("Seal: %q %v", sealed, err)
	}
	again, _ := a.Seal(secret)
	if again == sealed {
		t.Error("two seals of one secret are equal: the nonce is not fresh")
	}
	if got, err := a.Open(sealed); err != nil || got != secret {
		t.Errorf("Open: %q %v", got, err)
	}
	if _, err := b.Open(sealed); !errors.Is(err, atrest.ErrWrongKey) {
		t.Errorf("Open with another key: %v, want ErrWrongKey", err)
	}
	var none *atrest.Key
	if _, err := none.Open(sealed); !errors.Is(err, atrest.ErrNoKey) {
		t.Errorf("Open without a key: %v, want ErrNoKey", err)
	}
	for _, damaged := range []string{atrest.Prefix, atrest.Prefix + "AAAA", atrest.Prefix + "!!", sealed[:len(sealed)-4] + "AAAA"} {
		if _, err := a.Open(damaged); !errors.Is(err, atrest.ErrWrongKey) {
			t.Errorf("Open(%q): %v, want ErrWrongKey", damaged, err)
		}
	}
	for _, k := range []*atrest.Key{a, none} {
		if got, err := k.Open(secret); err != nil || got != secret {
			t.Errorf("Open of a plaintext: %q %v", got, err)
		}
	}
	if got, _ := none.Seal(secret); got != secret {
		t.Errorf("Seal without a key: %q, want the plaintext", got)
	}
	if got, _ := a.Seal(""); got != "" {
		t.Errorf("Seal of nothing: %q", got)
	}

	resealed, err := atrest.Reseal(sealed, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(resealed); err != nil || got != secret {
		t.Errorf("Reseal: %q %v", got, err)
	}
	if _, err := atrest.Reseal(sealed, b, a); !errors.Is(err, atrest.ErrWrongKey) {
		t.Errorf("Reseal from the wrong key: %v", err)
	}
}

// A key is 32 characters; a variable that holds another length, or is
// unset, is an error naming the variable and the flag, never its value.
func TestFromVariable(t *testing.T) {
	if k, err := atrest.FromVariable("", "--encryptionEnv"); k != nil || err != nil {
		t.Errorf("no variable named: %v %v, want no key", k, err)
	}
	t.Setenv("ATREST_TEST_SHORT", "sixteen-char-key")
	t.Setenv("ATREST_TEST_EMPTY", "")
	t.Setenv("ATREST_TEST_GOOD", strings.Repeat("k", 32))
	for _, name := range []string{"ATREST_TEST_SHORT", "ATREST_TEST_EMPTY", "ATREST_TEST_UNSET"} {
		_, err := atrest.FromVariable(name, "--encryptionEnv")
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "--encryptionEnv") ||
			strings.Contains(err.Error(), "sixteen") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if k, err := atrest.FromVariable("ATREST_TEST_GOOD", "--encryptionEnv"); k == nil || err != nil {
		t.Errorf("a key of 32: %v %v", k, err)
	}
}
