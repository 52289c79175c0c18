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

// errSettingsWrongKey is ResealSettings' error when the settings do not
// open with from.
var errSettingsWrongKey = errors.New("PocketBase's settings do not open with the key in the variable --encryptionEnv names: " +
	"run the rotation with --encryptionEnv naming the key the service serves with now")

// ResealSettings encrypts PocketBase's stored settings with to, in tx,
// opening them with from when they are encrypted, so that PocketBase reads
// them with the new key after a rotation; without to (nil), it stores them
// in plaintext. It changes no value in them.
func ResealSettings(tx core.App, from, to *Key) error {
	var stored string
	if err := tx.NonconcurrentDB().NewQuery(settingsSQL).Row(&stored); err != nil {
		return err
	}
	plaintext := []byte(stored)
	if !json.Valid(plaintext) {
		if from == nil {
			return errors.New("PocketBase's settings are encrypted, and --encryptionEnv names no key: " +
				"run the rotation with --encryptionEnv naming the key the service serves with now")
		}
		// security.Decrypt slices the nonce off unchecked: a short value
		// would panic there.
		raw, err := base64.StdEncoding.DecodeString(stored)
		if err != nil || len(raw) < from.aead.NonceSize()+from.aead.Overhead() {
			return errSettingsWrongKey
		}
		if plaintext, err = security.Decrypt(stored, from.value); err != nil {
			return errSettingsWrongKey
		}
	}
	value := string(plaintext)
	if to != nil {
		var err error
		if value, err = security.Encrypt(plaintext, to.value); err != nil {
			return err
		}
	}
	_, err := tx.NonconcurrentDB().NewQuery(updateSettingsSQL).Bind(dbx.Params{"value": value}).Execute()
	return err
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
