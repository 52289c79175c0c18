package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/atrest"
)

// The collections (migrations/1763683820_webhooks.go).
const (
	EndpointsCollection = "webhook_endpoints"
	EventsCollection    = "webhook_events"
	AttemptsCollection  = "webhook_attempts"
)

// The fields of webhook_endpoints. This file and the migrations are the only
// places that name the webhook collections' fields: the rest of the package
// reads and writes an endpoint through endpointRecord's methods, and the
// events and attempts through the SQL below.
const (
	urlField            = "url"
	eventsField         = "events" // a JSON list of Type
	descriptionField    = "description"
	secretField         = "secret"          // hidden
	previousSecretField = "previous_secret" // hidden; signs too until previousUntilField
	previousUntilField  = "previous_until"
	pausedField         = "paused"
	pausedReasonField   = "paused_reason"
	failingSinceField   = "failing_since"
	createdField        = "created"
)

// secretFields are the endpoint's hidden fields, which no answer shows.
var secretFields = []string{secretField, previousSecretField}

// auditedFields are the fields of an endpoint the trail records; never a
// secret.
var auditedFields = []string{urlField, eventsField, descriptionField, pausedField}

var (
	_ core.RecordProxy  = (*endpointRecord)(nil)
	_ core.PreValidator = (*endpointRecord)(nil)
)

// endpointRecord is a record of the webhook_endpoints collection, read and
// written through its methods (a record proxy, as PocketBase's core.MFA).
type endpointRecord struct {
	*core.Record
}

// newEndpointRecord is a new, unsaved endpoint record.
func newEndpointRecord(app core.App) (*endpointRecord, error) {
	collection, err := app.FindCachedCollectionByNameOrId(EndpointsCollection)
	if err != nil {
		return nil, err
	}
	return &endpointRecord{core.NewRecord(collection)}, nil
}

// findEndpointRecord is the endpoint of the given id, or ErrNotFound.
func findEndpointRecord(app core.App, id string) (*endpointRecord, error) {
	r, err := app.FindRecordById(EndpointsCollection, id)
	if err != nil {
		return nil, ErrNotFound
	}
	return &endpointRecord{r}, nil
}

// endpointRecords is every endpoint, oldest first.
func endpointRecords(app core.App) ([]*endpointRecord, error) {
	records, err := app.FindRecordsByFilter(EndpointsCollection, "", createdField, 0, 0)
	if err != nil {
		return nil, err
	}
	list := make([]*endpointRecord, len(records))
	for i, r := range records {
		list[i] = &endpointRecord{r}
	}
	return list, nil
}

// ProxyRecord returns the proxied record.
func (r *endpointRecord) ProxyRecord() *core.Record { return r.Record }

// SetProxyRecord loads record into the proxy.
func (r *endpointRecord) SetProxyRecord(record *core.Record) { r.Record = record }

// PreValidate checks that the proxy holds a webhook_endpoints record.
func (r *endpointRecord) PreValidate(context.Context, core.App) error {
	if r.Record == nil || r.Collection().Name != EndpointsCollection {
		return errors.New("missing or invalid webhook_endpoints proxy record")
	}
	return nil
}

// URL is where the endpoint's events are sent.
func (r *endpointRecord) URL() string { return r.GetString(urlField) }

// SetURL sets where the endpoint's events are sent.
func (r *endpointRecord) SetURL(u string) { r.Set(urlField, u) }

// Events are the event types the endpoint subscribes to; never nil.
func (r *endpointRecord) Events() []Type {
	events := []Type{}
	_ = r.UnmarshalJSONField(eventsField, &events)
	return events
}

// SetEvents sets the event types the endpoint subscribes to.
func (r *endpointRecord) SetEvents(events []Type) { r.Set(eventsField, events) }

// Description is staff's note on the endpoint.
func (r *endpointRecord) Description() string { return r.GetString(descriptionField) }

// SetDescription sets staff's note on the endpoint.
func (r *endpointRecord) SetDescription(d string) { r.Set(descriptionField, d) }

// PreviousUntil is until when the previous secret signs; zero: never.
func (r *endpointRecord) PreviousUntil() time.Time { return r.GetDateTime(previousUntilField).Time() }

// Secrets are the secrets that sign a delivery now, opened with key
// (package atrest: stored sealed, or plaintext from before a key): the
// secret, and the previous one during its grace.
func (r *endpointRecord) Secrets(key *atrest.Key) ([]string, error) {
	stored := []string{r.GetString(secretField)}
	if prev := r.GetString(previousSecretField); prev != "" && r.PreviousUntil().After(time.Now()) {
		stored = append(stored, prev)
	}
	secrets := make([]string, len(stored))
	for i, s := range stored {
		secret, err := key.Open(s)
		if err != nil {
			return nil, err
		}
		secrets[i] = secret
	}
	return secrets, nil
}

// SetSecret makes secret, sealed with key, the endpoint's secret. With a
// grace (zero: none), the secret it replaces signs beside it until then.
func (r *endpointRecord) SetSecret(key *atrest.Key, secret string, grace time.Duration) error {
	sealed, err := key.Seal(secret)
	if err != nil {
		return err
	}
	if grace > 0 {
		previous, err := atrest.Reseal(r.GetString(secretField), key, key)
		if err != nil {
			return err
		}
		r.Set(previousSecretField, previous)
		r.Set(previousUntilField, time.Now().Add(grace).UTC())
	} else {
		r.Set(previousSecretField, "")
		r.Set(previousUntilField, "")
	}
	r.Set(secretField, sealed)
	return nil
}

// plaintextSecrets is whether a secret of the endpoint is stored in
// plaintext.
func (r *endpointRecord) plaintextSecrets() bool {
	for _, f := range secretFields {
		if s := r.GetString(f); s != "" && !atrest.Sealed(s) {
			return true
		}
	}
	return false
}

// reseal opens the endpoint's secrets with from and seals them with to.
func (r *endpointRecord) reseal(from, to *atrest.Key) error {
	for _, f := range secretFields {
		if s := r.GetString(f); s != "" {
			resealed, err := atrest.Reseal(s, from, to)
			if err != nil {
				return err
			}
			r.Set(f, resealed)
		}
	}
	return nil
}

// Paused is whether the deliveries to the endpoint are paused.
func (r *endpointRecord) Paused() bool { return r.GetBool(pausedField) }

// PausedReason is why the endpoint is paused, as staff see it.
func (r *endpointRecord) PausedReason() string { return r.GetString(pausedReasonField) }

// SetPaused pauses or resumes the endpoint. A pause by staff says so unless
// it has a reason already; a resumption forgets the reason and the failures.
func (r *endpointRecord) SetPaused(paused bool) {
	r.Set(pausedField, paused)
	if !paused {
		r.Set(pausedReasonField, "")
		r.Set(failingSinceField, "")
	} else if r.PausedReason() == "" {
		r.Set(pausedReasonField, "Paused by staff.")
	}
}

// FailingSince is the first failed attempt since the last delivery; zero:
// none.
func (r *endpointRecord) FailingSince() time.Time { return r.GetDateTime(failingSinceField).Time() }

// Created is when the endpoint was created.
func (r *endpointRecord) Created() time.Time { return r.GetDateTime(createdField).Time() }

// audited are the endpoint's audited fields (auditedFields) as the trail
// records them: the events as a list, the rest as stored.
func (r *endpointRecord) audited() map[string]any {
	return map[string]any{
		urlField:         r.URL(),
		eventsField:      r.Events(),
		descriptionField: r.Description(),
		pausedField:      r.Paused(),
	}
}

// rollDetails are the audit details of a secret's roll: until when the
// previous secret signs, as stored.
func (r *endpointRecord) rollDetails() map[string]any {
	return map[string]any{previousUntilField: r.GetString(previousUntilField)}
}

// pauseDetails are the audit details of the system's pause.
func pauseDetails(reason string, since time.Time) map[string]any {
	return map[string]any{"reason": reason, failingSinceField: since.UTC().Format(time.RFC3339)}
}

// The package's SQL on its collections follows: this file is the one place
// that names their fields.

// The deliverer's statements, prepared once on the write connection (the
// read pool's for dispatch's look) and run in each transaction. A set of
// events is a JSON array of ids, read with json_each, so that one
// prepared statement serves every batch's size.
const (
	// headsSQL are an endpoint's oldest pending events, in order: what it
	// gets next. The index on (endpoint, status) holds the rowid in order,
	// so this reads no more entries than it returns, however long the
	// outbox.
	headsSQL = "SELECT id, webhook_id, endpoint, type, body, attempts, next_attempt, lease_until, traceparent FROM " + EventsCollection +
		" WHERE endpoint = :endpoint AND status = 'pending' ORDER BY rowid LIMIT :limit"
	// leaseSQL leases a batch's first event, the endpoint's oldest
	// pending one: every instance sends an endpoint's events from that one
	// on, in order, and sends nothing while it is leased, so its lease
	// holds the batch. extendSQL extends it.
	leaseSQL = "UPDATE " + EventsCollection + " SET lease_owner = :owner, lease_until = :until" +
		" WHERE id = :id AND status = 'pending' AND lease_until < :now"
	extendSQL    = "UPDATE " + EventsCollection + " SET lease_until = :until WHERE id = :id AND lease_owner = :owner"
	deliveredSQL = "UPDATE " + EventsCollection + " SET status = 'delivered', attempts = attempts + 1," +
		" lease_owner = '', lease_until = '', updated = :now WHERE id IN (SELECT value FROM json_each(:ids))"
	failedSQL = "UPDATE " + EventsCollection + " SET status = :status, attempts = :attempts, next_attempt = :next," +
		" lease_owner = '', lease_until = '', updated = :now WHERE id = :id"
	releaseSQL = "UPDATE " + EventsCollection + " SET lease_owner = '', lease_until = ''" +
		" WHERE id IN (SELECT value FROM json_each(:ids)) AND lease_owner = :owner"
	// attemptsSQL writes a batch's history, in order, from a JSON array
	// of [id, event, webhook_id, events, status, error, latency_ms,
	// response] (jsonb_each: as insertEventsSQL).
	attemptsSQL = "INSERT INTO " + AttemptsCollection +
		" (id, event, endpoint, webhook_id, events, status, error, latency_ms, response, created)" +
		" SELECT value->>0, value->>1, :endpoint, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7, :now" +
		" FROM jsonb_each(:rows) ORDER BY key"
)

// insertEventSQL writes one event for one endpoint, unless the endpoint is
// gone (deleted, on another instance, since the subscriptions were read):
// no event is left without its endpoint. insertEventsSQL does so for a
// JSON array of [id, webhook_id, endpoint, type, body, dedupe], in order:
// jsonb_each hands each row to ->> as binary JSON, which it reads without
// parsing text again.
const (
	insertEventSQL = "INSERT INTO " + EventsCollection +
		" (id, webhook_id, endpoint, type, body, status, attempts, next_attempt, lease_owner, lease_until, dedupe, traceparent, created, updated)" +
		" SELECT :id, :webhookId, :endpoint, :type, :body, 'pending', 0, :now, '', '', :dedupe, :traceparent, :now, :now" +
		" WHERE EXISTS (SELECT 1 FROM " + EndpointsCollection + " WHERE id = :endpoint)" +
		" ON CONFLICT DO NOTHING"
	insertEventsSQL = "INSERT INTO " + EventsCollection +
		" (id, webhook_id, endpoint, type, body, status, attempts, next_attempt, lease_owner, lease_until, dedupe, traceparent, created, updated)" +
		" SELECT value->>0, value->>1, value->>2, value->>3, value->>4, 'pending', 0, :now, '', '', value->>5, value->>6, :now, :now" +
		" FROM jsonb_each(:rows) WHERE EXISTS (SELECT 1 FROM " + EndpointsCollection + " WHERE id = value->>2)" +
		" ORDER BY key ON CONFLICT DO NOTHING"
)

// The endpoints' failures and pauses (Deliverer.endpointAfter): startFailingSQL
// and pauseSQL change an endpoint that has not changed meanwhile.
const (
	clearFailingSQL = "UPDATE " + EndpointsCollection + " SET " + failingSinceField + " = '' WHERE id = {:id}"
	startFailingSQL = "UPDATE " + EndpointsCollection + " SET " + failingSinceField + " = {:now}" +
		" WHERE id = {:id} AND " + failingSinceField + " = ''"
	pauseSQL = "UPDATE " + EndpointsCollection + " SET " + pausedField + " = TRUE, " + pausedReasonField + " = {:reason}, " +
		failingSinceField + " = {:since} WHERE id = {:id} AND " + pausedField + " = FALSE"
)

// Prune's statements: pruneEventsSQL keeps an event that an attempt kept
// still names.
const (
	pruneAttemptsSQL = "DELETE FROM " + AttemptsCollection + " WHERE created < {:cutoff}"
	pruneEventsSQL   = "DELETE FROM " + EventsCollection + " WHERE status != 'pending' AND updated < {:cutoff}" +
		" AND id NOT IN (SELECT event FROM " + AttemptsCollection + ")"
)

// The outbox's reads: the subscriptions of the endpoints not paused, in
// order of creation; an event's webhook-id; whether an id is taken; and
// how many events wait, of every instance.
const (
	subscriptionsSQL  = "SELECT id, " + eventsField + " FROM " + EndpointsCollection + " WHERE " + pausedField + " = FALSE ORDER BY rowid"
	eventWebhookIDSQL = "SELECT webhook_id FROM " + EventsCollection + " WHERE id = ?"
	eventTakenSQL     = "SELECT COUNT(*) FROM " + EventsCollection + " WHERE id = ?"
	pendingSQL        = "SELECT COUNT(*) FROM " + EndpointsCollection + " e JOIN " + EventsCollection +
		" v ON v.endpoint = e.id AND v.status = 'pending'"
)

// plaintextSecretsSQL counts the endpoints with a secret stored in
// plaintext: not empty, and not beginning with atrest.Prefix.
const plaintextSecretsSQL = "SELECT COUNT(*) FROM " + EndpointsCollection + " WHERE " +
	"(" + secretField + " != '' AND instr(" + secretField + ", '" + atrest.Prefix + "') != 1) OR " +
	"(" + previousSecretField + " != '' AND instr(" + previousSecretField + ", '" + atrest.Prefix + "') != 1)"

// A backup's stored secrets, read before it is restored: the endpoints'
// table, if the backup has one, and every endpoint's secrets.
const (
	endpointsTableSQL = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '" + EndpointsCollection + "'"
	storedSecretsSQL  = "SELECT " + secretField + ", " + previousSecretField + " FROM " + EndpointsCollection
)

// The endpoints' pages: an endpoint's history, deleted with it by plain
// DELETEs; the pending and failed counts, of every endpoint or of one; its
// last attempts, newest first; and a failed event, made pending again by
// resendSQL.
const (
	deleteAttemptsSQL = "DELETE FROM " + AttemptsCollection + " WHERE endpoint = {:id}"
	deleteEventsSQL   = "DELETE FROM " + EventsCollection + " WHERE endpoint = {:id}"
	countEventsSQL    = "SELECT endpoint, status, COUNT(*) AS n FROM " + EventsCollection +
		" WHERE status IN ('pending', 'failed') GROUP BY endpoint, status"
	countEndpointEventsSQL = "SELECT endpoint, status, COUNT(*) AS n FROM " + EventsCollection +
		" WHERE status IN ('pending', 'failed') AND endpoint = {:endpoint} GROUP BY endpoint, status"
	attemptsOfSQL = "SELECT a.id, a.event, a.webhook_id, a.events, e.type, e.status AS event_status, a.status, a.error," +
		" a.latency_ms, a.response, a.created FROM " + AttemptsCollection + " a JOIN " + EventsCollection + " e ON e.id = a.event" +
		" WHERE a.endpoint = {:endpoint} ORDER BY a.created DESC, a.rowid DESC LIMIT {:limit}"
	failedEventSQL = "SELECT webhook_id, type FROM " + EventsCollection +
		" WHERE id = {:id} AND endpoint = {:endpoint} AND status = 'failed'"
	resendSQL = "UPDATE " + EventsCollection + " SET status = 'pending', attempts = 0," +
		" next_attempt = {:now}, lease_owner = '', lease_until = '', updated = {:now} WHERE id = {:id}"
)
