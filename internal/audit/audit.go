// Package audit is the append-only trail of changes to API keys: which key,
// what changed (the values before and after), who changed it, from where and
// when. A record is written in the transaction of the change it describes, so
// it exists if and only if the change committed; nobody can change or delete
// one, superusers included.
//
// Action names are "resource.past_participle" (key.created, key.rolled), so
// that later resources fit beside them (pet.created, webhook.created). The
// webhook events of the same name describe the same changes.
package audit

// Collection is the name of the collection that holds the trail.
const Collection = "audit_log"

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

// Actors that are not a superuser. A superuser acts as its record id, with
// its email beside it.
const (
	ActorCLI    = "cli"    // the keys command, on the server's own machine
	ActorSystem = "system" // the service itself: the limiter's bans
)
