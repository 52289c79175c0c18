// Package atrest keeps secrets encrypted at rest: the secrets the service
// must read back in plaintext (a webhook endpoint's signing secret, which
// signs every delivery, unlike an API key, of which only a hash is kept) are
// stored sealed with AES-256-GCM under a key that is not in the database.
// The key is PocketBase's own: --encryptionEnv names an environment variable
// holding 32 characters, the key PocketBase encrypts its settings with, so
// one key, kept beside the data directory and never in it, opens both, and
// no rule, view, export or backup of data.db reveals a secret.
//
// A sealed value is Prefix and the base64 of the nonce and the ciphertext;
// any other value is a plaintext kept from before a key was set, which Open
// returns as it is, so that an install keeps working until its first start
// with a key seals it.
package atrest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pocketbase/pocketbase/core"
)

// Prefix begins every sealed value; no plaintext secret begins with it
// (a webhook secret begins with whsec_).
const Prefix = "enc1:"

// KeyLength is the length of a key, in characters, as PocketBase's
// --encryptionEnv takes it.
const KeyLength = 32

// additionalData binds a sealed value to this use, so that PocketBase's own
// ciphertext under the same key is never taken for one of ours.
var additionalData = []byte("petstore secret at rest v1")

// ErrNoKey is the error of opening a sealed value without a key.
var ErrNoKey = errors.New("the secret is encrypted, and no key is configured: " +
	"serve --encryptionEnv VAR names the environment variable that holds the 32-character key it was encrypted with")

// ErrWrongKey is the error of opening a sealed value with another key than
// the one that sealed it, or a value that is not a sealed one.
var ErrWrongKey = errors.New("the secret does not open with the key configured: " +
	"it was encrypted with another key than the one in the variable --encryptionEnv names")

// Key seals and opens secrets. A nil *Key is no key: it seals nothing
// (Seal returns the plaintext) and opens plaintext alone.
type Key struct {
	aead  cipher.AEAD
	value string // the 32 characters, as PocketBase's security.Encrypt takes them
}

// New is the key of 32 characters key.
func New(key string) (*Key, error) {
	if len(key) != KeyLength {
		return nil, fmt.Errorf("an encryption key is %d characters; this one has %d", KeyLength, len(key))
	}
	block, err := aes.NewCipher([]byte(key))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead, value: key}, nil
}

// FromEnv is the key in the variable that --encryptionEnv names, or nil
// when the flag names none. A flag that names a variable that is unset,
// empty or not 32 characters long is an error naming both.
func FromEnv(app core.App) (*Key, error) {
	return FromVariable(app.EncryptionEnv(), "--encryptionEnv")
}

// FromVariable is the key in the environment variable name, which flag
// names, or nil when name is empty.
func FromVariable(name, flag string) (*Key, error) {
	if name == "" {
		return nil, nil
	}
	value, ok := os.LookupEnv(name)
	if !ok || value == "" {
		return nil, fmt.Errorf("%s names the environment variable %s, which is not set: set it to the 32-character key", flag, name)
	}
	key, err := New(value)
	if err != nil {
		return nil, fmt.Errorf("the variable %s, which %s names: %w", name, flag, err)
	}
	return key, nil
}

// Sealed is whether stored is a sealed value rather than a plaintext.
func Sealed(stored string) bool { return strings.HasPrefix(stored, Prefix) }

// Seal is plaintext sealed under k; without a key (k nil), plaintext
// itself. An empty plaintext stays empty: there is nothing to hide.
func (k *Key) Seal(plaintext string) (string, error) {
	if k == nil || plaintext == "" {
		return plaintext, nil
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := k.aead.Seal(nonce, nonce, []byte(plaintext), additionalData)
	return Prefix + base64.StdEncoding.EncodeToString(sealed), nil
}

// Open is the plaintext of stored: stored itself when it is not sealed,
// else what k opens (ErrNoKey without a key, ErrWrongKey when k did not
// seal it). Its errors never hold stored.
func (k *Key) Open(stored string) (string, error) {
	if !Sealed(stored) {
		return stored, nil
	}
	if k == nil {
		return "", ErrNoKey
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, Prefix))
	if err != nil || len(raw) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", ErrWrongKey
	}
	nonce, ciphertext := raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():]
	plaintext, err := k.aead.Open(nil, nonce, ciphertext, additionalData)
	if err != nil {
		return "", ErrWrongKey
	}
	return string(plaintext), nil
}

// Reseal is stored opened with from and sealed under to: a plaintext is
// sealed, a sealed value sealed anew.
func Reseal(stored string, from, to *Key) (string, error) {
	plaintext, err := from.Open(stored)
	if err != nil {
		return "", err
	}
	return to.Seal(plaintext)
}

// RunErasing runs fn in a transaction of app's that leaves no earlier
// version of what it overwrites in the database's files: SQLite's
// secure_delete zeroes the space a rewritten or deleted row leaves (it would
// otherwise keep a plaintext secret, or one sealed under a retired key, in
// data.db and every copy of it), and a checkpoint that truncates the WAL
// drops the frames that held the earlier versions of its pages.
func RunErasing(app core.App, fn func(tx core.App) error) error {
	db := app.NonconcurrentDB() // one connection: the pragma holds for fn's transaction
	if _, err := db.NewQuery("PRAGMA secure_delete = ON").Execute(); err != nil {
		return err
	}
	err := app.RunInTransaction(fn)
	if _, offErr := db.NewQuery("PRAGMA secure_delete = OFF").Execute(); err == nil {
		err = offErr
	}
	if err != nil {
		return err
	}
	var busy, frames, checkpointed int
	if err := db.NewQuery("PRAGMA wal_checkpoint(TRUNCATE)").Row(&busy, &frames, &checkpointed); err != nil {
		return err
	}
	if busy != 0 {
		return ErrWALKept
	}
	return nil
}

// ErrWALKept is RunErasing's error when its transaction committed but
// another connection kept the WAL from being emptied: the WAL may hold
// the earlier versions until the next checkpoint that empties it.
var ErrWALKept = errors.New("the secrets are sealed, but another connection kept the database's WAL, " +
	"which may still hold their earlier version, from being emptied")
