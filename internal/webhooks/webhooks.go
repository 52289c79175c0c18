// Package webhooks sends petstore's events to the endpoints staff subscribe,
// as Standard Webhooks (https://www.standardwebhooks.com) define them: a
// signed JSON POST, retried until delivered.
//
// Every event is written to an outbox (the webhook_events collection, one
// record per event and endpoint) in the SQLite transaction of the change it
// tells of, so it exists if and only if the change committed. A Deliverer
// sends the outbox: per endpoint, in order of creation, one event at a time,
// held by a lease in SQLite (on the endpoint's oldest pending event, from
// which every instance starts) so that, with several instances on one data
// directory, one instance sends an endpoint's events at a time. A crash at any moment
// loses nothing: an event whose lease ran out is sent again, with the same
// webhook-id, which receivers use to drop repeats.
//
// The package is one home for the outbox (outbox.go), its sending
// (deliver.go), the signatures (this file), the endpoints (endpoints.go)
// and what targets may be reached (target.go).
package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Type is an event's type: "resource.past_participle", as the audit
// trail's actions of the same names.
type Type string

// The event types.
const (
	PetCreated         Type = "pet.created"
	KeyCreated         Type = "key.created"
	KeyRolled          Type = "key.rolled"
	KeyRevoked         Type = "key.revoked"
	KeyBanned          Type = "key.banned"
	KeyDayQuotaReached Type = "key.day_quota_reached"
	// A key crossed 80 % or 100 % of its day quota: once per day window (a
	// key's, or a customer's its keys share), UTC day and threshold (package
	// usage); the event names the key whose request crossed, and its
	// customer, if any.
	UsageThreshold  Type = "usage.threshold"
	PlanChanged     Type = "plan.changed" // a plan's name, quotas, ban settings or counted, in the dashboard
	CategoryCreated Type = "category.created"
	CategoryRenamed Type = "category.renamed"
	CategoryDeleted Type = "category.deleted"
	TestEvent       Type = "webhook.test" // sent by staff's "send test event", to one endpoint
)

// A secret is secretPrefix and the base64 of secretBytes random bytes; a
// signature is signatureVersionTag and a base64 HMAC.
const (
	secretPrefix        = "whsec_"
	secretBytes         = 32
	signatureVersionTag = "v1,"
)

// Types are the event types an endpoint may subscribe to.
var Types = []Type{PetCreated, KeyCreated, KeyRolled, KeyRevoked, KeyBanned, KeyDayQuotaReached, UsageThreshold,
	PlanChanged, CategoryCreated, CategoryRenamed, CategoryDeleted}

// NewSecret is a new signing secret: "whsec_" and the base64 of 32 random
// bytes, as Standard Webhooks define it.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

var errBadSecret = errors.New("webhooks: a secret is whsec_ and base64")

// secretKey is the HMAC key of a secret: its base64 part, decoded.
func secretKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errBadSecret
	}
	return key, nil
}

// Sign is the webhook-signature header's value for one delivery: for each
// secret, "v1," and the base64 HMAC-SHA256 of "id.timestamp.body",
// separated by spaces (several during a secret's roll).
func Sign(id string, timestamp int64, body []byte, secrets ...string) (string, error) {
	keys, err := secretKeys(secrets...)
	if err != nil {
		return "", err
	}
	return sign(id, timestamp, body, keys), nil
}

// secretKeys are the HMAC keys of secrets, decoded once for all the
// attempts that sign with them.
func secretKeys(secrets ...string) ([][]byte, error) {
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		key, err := secretKey(secret)
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// sign is Sign with the secrets' keys.
func sign(id string, timestamp int64, body []byte, keys [][]byte) string {
	var b strings.Builder
	for i, key := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write(strconv.AppendInt(nil, timestamp, 10))
		mac.Write([]byte{'.'})
		mac.Write(body)
		b.WriteString(signatureVersionTag)
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
