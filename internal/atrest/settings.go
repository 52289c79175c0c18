package atrest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
)

// PocketBase's settings are one row of _params, its value their JSON, or
// with --encryptionEnv, the base64 of that JSON encrypted with the key
// (security.Encrypt): PocketBase reads either.
const (
	settingsSQL       = "SELECT value FROM _params WHERE id = 'settings'"
	updateSettingsSQL = "UPDATE _params SET value = {:value} WHERE id = 'settings'"
)

// errSettingsWrongKey is the error of settings that do not open with the
// key given.
var errSettingsWrongKey = errors.New("PocketBase's settings do not open with the key in the variable --encryptionEnv names")

// ResealSettings encrypts PocketBase's stored settings with to, in tx,
// opening them with from when they are encrypted, so that PocketBase reads
// them with the new key after a rotation. It changes no value in them.
func ResealSettings(tx core.App, from, to *Key) error {
	var stored string
	if err := tx.NonconcurrentDB().NewQuery(settingsSQL).Row(&stored); err != nil {
		return err
	}
	plaintext, err := openSettings(stored, from)
	if err != nil {
		return err
	}
	value, err := security.Encrypt(plaintext, to.value)
	if err != nil {
		return err
	}
	_, err = tx.NonconcurrentDB().NewQuery(updateSettingsSQL).Bind(dbx.Params{"value": value}).Execute()
	return err
}

// CheckSettings is an error when the settings stored in db are encrypted
// and key does not open them.
func CheckSettings(db dbx.Builder, key *Key) error {
	var stored string
	if err := db.NewQuery(settingsSQL).Row(&stored); err != nil {
		return err
	}
	_, err := openSettings(stored, key)
	return err
}

// openSettings is the JSON of the stored settings, opened with key when
// they are encrypted.
func openSettings(stored string, key *Key) ([]byte, error) {
	if json.Valid([]byte(stored)) {
		return []byte(stored), nil
	}
	if key == nil {
		return nil, errors.New("PocketBase's settings are encrypted, and --encryptionEnv names no key")
	}
	// security.Decrypt slices the nonce off unchecked: a short value
	// would panic there.
	raw, err := base64.StdEncoding.DecodeString(stored)
	if err != nil || len(raw) < key.aead.NonceSize()+key.aead.Overhead() {
		return nil, errSettingsWrongKey
	}
	plaintext, err := security.Decrypt(stored, key.value)
	if err != nil {
		return nil, errSettingsWrongKey
	}
	return plaintext, nil
}

// Bind names --encryptionEnv in PocketBase's failure to read its settings
// at the bootstrap ("cipher: message authentication failed", or a missing
// key named ""): the settings are encrypted with the key of the secrets,
// and a start with another key or none fails there first.
func Bind(app core.App) {
	app.OnSettingsReload().BindFunc(func(e *core.SettingsReloadEvent) error {
		if err := e.Next(); err != nil {
			if _, keyErr := FromEnv(e.App); keyErr != nil {
				return keyErr
			}
			return fmt.Errorf("PocketBase's settings, stored encrypted, do not open (%w): serve with --encryptionEnv "+
				"(PETSTORE_ENCRYPTION_ENV) naming the variable that holds the key they and the webhook secrets were encrypted with, "+
				"the new one after `petstore secrets rotate-key`", err)
		}
		return nil
	})
}
