package webhooks

import (
	"database/sql"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/atrest"
	"petstore/internal/audit"
)

// SealSecrets seals, with key, every endpoint secret stored in plaintext
// (an install's from before its key, or a restored backup's), in one
// transaction audited as the system's (webhook.secrets_sealed, with how
// many endpoints: a list of ids could outgrow the trail's bound), and
// checks that every sealed one opens with key. Serve runs it at each start;
// it changes nothing when nothing is plaintext. Without a key (nil) it
// changes nothing and returns how many endpoints keep a secret in
// plaintext. A sealed secret without a key (atrest.ErrNoKey), or one that
// key does not open (atrest.ErrWrongKey), is an error: the service refuses
// to start rather than send deliveries no receiver can verify. The errors
// never hold a secret.
func SealSecrets(app core.App, key *atrest.Key) (plaintext int, err error) {
	run := app.RunInTransaction
	if key != nil {
		var n int64
		if err := app.NonconcurrentDB().NewQuery(plaintextSecretsSQL).Row(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			run = func(fn func(core.App) error) error { return atrest.RunErasing(app, fn) }
		}
	}
	err = run(func(tx core.App) error {
		records, err := endpointRecords(tx)
		if err != nil {
			return err
		}
		sealed := 0
		for _, r := range records {
			if _, err := r.Secrets(key); err != nil {
				return err
			}
			if !r.plaintextSecrets() {
				continue
			}
			if key == nil {
				plaintext++
				continue
			}
			if err := r.reseal(key, key); err != nil {
				return err
			}
			if err := tx.Save(r); err != nil {
				return err
			}
			sealed++
		}
		if sealed == 0 {
			return nil
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookSecretsSealed, By: audit.System,
			Details: map[string]any{"endpoints": sealed}})
	})
	return plaintext, err
}

// ResealSecrets opens every endpoint's secrets with from and seals them with
// to, in tx, the transaction of a key's rotation (atrest.RunErasing, which
// leaves nothing sealed under the retired key behind); it returns how many
// endpoints it resealed. A secret from does not open is an error: nothing
// is resealed.
func ResealSecrets(tx core.App, from, to *atrest.Key) (int, error) {
	records, err := endpointRecords(tx)
	if err != nil {
		return 0, err
	}
	for _, r := range records {
		if err := r.reseal(from, to); err != nil {
			return 0, err
		}
		if err := tx.Save(r); err != nil {
			return 0, err
		}
	}
	return len(records), nil
}

// CheckSecrets is an error when a secret stored in db, another data
// directory's database (a backup's, before it is restored), does not open
// with key; a database without endpoints passes.
func CheckSecrets(db dbx.Builder, key *atrest.Key) error {
	var tables int
	if err := db.NewQuery(endpointsTableSQL).Row(&tables); err != nil || tables == 0 {
		return err
	}
	var rows []struct {
		Secret   string `db:"secret"`
		Previous string `db:"previous_secret"`
	}
	if err := db.NewQuery(storedSecretsSQL).All(&rows); err != nil {
		return err
	}
	for _, r := range rows {
		for _, stored := range []string{r.Secret, r.Previous} {
			if _, err := key.Open(stored); err != nil {
				return err
			}
		}
	}
	return nil
}

// PlaintextSecrets is how many endpoints keep a secret in plaintext: 0
// once a key is configured and the service has started with it.
func PlaintextSecrets(db *sql.DB) (n int64, err error) {
	err = db.QueryRow(plaintextSecretsSQL).Scan(&n)
	return n, err
}
