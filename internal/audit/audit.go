// Package audit is the append-only trail of changes to API keys and webhook
// endpoints: which key or endpoint, what changed (the values before and after), who changed it, from where and
// when. A record is written in the transaction of the change it describes, so
// it exists if and only if the change committed; nobody can change or delete
// one, superusers included.
//
// Action names are "resource.past_participle" (key.created, key.rolled), so
// that later resources fit beside them (pet.created, webhook.created). The
// webhook events of the same name describe the same changes.
package audit

import "github.com/pocketbase/pocketbase/core"

// Collection is the name of the collection that holds the trail.
const Collection = "audit_log"

// The fields of audit_log.
const (
	ActionField     = "action"
	KeyField        = "key"     // the api_keys record id
	WebhookField    = "webhook" // the webhook_endpoints record id, kept after its deletion
	ActorField      = "actor"
	ActorEmailField = "actor_email"
	AddressField    = "address"
	DetailsField    = "details"
	CreatedField    = "created"
)

// Action is what happened.
type Action string

// The actions on API keys.
const (
	KeyCreated       Action = "key.created"
	KeyRolled        Action = "key.rolled"
	KeyRevoked       Action = "key.revoked"
	KeyExpiryChanged Action = "key.expiry_changed"
	KeyBanLifted     Action = "key.ban_lifted"
	KeyBanned        Action = "key.banned"
	KeyScopesChanged Action = "key.scopes_changed"
	KeyQuotaChanged  Action = "key.quota_changed" // plan, per-minute or per-day quota
)

// The actions on webhook endpoints. A secret roll's details hold until when
// the previous secret signs too, never a secret.
const (
	WebhookCreated      Action = "webhook.created"
	WebhookChanged      Action = "webhook.changed" // url, events, description or paused, by staff
	WebhookDeleted      Action = "webhook.deleted"
	WebhookSecretRolled Action = "webhook.secret_rolled"
	WebhookPaused       Action = "webhook.paused" // by the service, after failing for days
	WebhookEventResent  Action = "webhook.event_resent"
	WebhookTestSent     Action = "webhook.test_sent"
)

// The actions of cluster mode, by the service (System): a node became the
// leader and serves (its details name the term and the node), or a leader
// handed the leadership over.
const (
	ClusterPromoted    Action = "cluster.promoted"
	ClusterSteppedDown Action = "cluster.stepped_down"
)

// Actors that are not a superuser. A superuser acts as its record id, with
// its email beside it.
const (
	ActorCLI    = "cli"    // the keys command, on the server's own machine
	ActorSystem = "system" // the service itself: the limiter's bans, the webhooks' pauses
)

// Actor is who made a change.
type Actor struct {
	ID      string // a superuser's record id, ActorCLI or ActorSystem
	Email   string // a superuser's
	Address string // the client's address, for a change over HTTP
}

// The actors that are not a superuser.
var (
	CLI    = Actor{ID: ActorCLI}
	System = Actor{ID: ActorSystem}
)

// Entry is one record of the trail.
type Entry struct {
	Action  Action
	Key     string // the api_keys record id, for a key's change
	Webhook string // the webhook_endpoints record id, for an endpoint's change
	By      Actor
	Details map[string]any // the values before and after: {"field": {"old": …, "new": …}}
}

// Write saves e with app, which is the transaction of the change e
// describes, so that the record exists if and only if the change commits.
func Write(app core.App, e Entry) error {
	collection, err := app.FindCachedCollectionByNameOrId(Collection)
	if err != nil {
		return err
	}
	r := core.NewRecord(collection)
	r.Set(ActionField, string(e.Action))
	r.Set(KeyField, e.Key)
	r.Set(WebhookField, e.Webhook)
	r.Set(ActorField, e.By.ID)
	r.Set(ActorEmailField, e.By.Email)
	r.Set(AddressField, e.By.Address)
	r.Set(DetailsField, e.Details)
	return app.Save(r)
}
