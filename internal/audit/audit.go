// Package audit is the append-only trail of changes to API keys, plans,
// webhook endpoints, categories, customers and backups: which key, endpoint, category or customer, what changed (the values before and after), who changed it, from where and
// when. A record is written in the transaction of the change it describes, so
// it exists if and only if the change committed; nobody can change or delete
// one, superusers included.
//
// Action names are "resource.past_participle" (key.created, key.rolled), so
// that later resources fit beside them (pet.created, webhook.created). The
// webhook events of the same name describe the same changes.
package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
)

// Collection is the name of the collection that holds the trail.
const Collection = "audit_log"

// The fields of audit_log.
const (
	ActionField     = "action"
	KeyField        = "key"      // the api_keys record id
	WebhookField    = "webhook"  // the webhook_endpoints record id, kept after its deletion
	CategoryField   = "category" // the category's number, as text, kept after its deletion
	CustomerField   = "customer" // the customers record id, kept after its deletion
	ActorField      = "actor"
	ActorEmailField = "actor_email"
	AddressField    = "address"
	RequestIDField  = "request_id"
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
	// The key's customer: {"customer": {"old": id, "new": id}} ("" for
	// none), with the plan it moved to, if it did.
	KeyCustomerChanged Action = "key.customer_changed"
)

// The actions on plans, which staff change in the dashboard. A plan's
// details name it ({"plan": {"id": …, "name": …}}), with the values before
// and after of the fields that changed.
const (
	PlanChanged Action = "plan.changed" // name, quotas, ban settings or counted
)

// The actions on PocketBase's backups (the dashboard's Settings, Backups,
// and its API). Their details name the backup ({"backup": name}).
const (
	BackupCreated    Action = "backup.created"
	BackupDownloaded Action = "backup.downloaded"
	BackupUploaded   Action = "backup.uploaded"
	BackupRestored   Action = "backup.restored" // written after the restore, into the restored trail
	BackupDeleted    Action = "backup.deleted"
	// A restore through the API refused, before anything changed: the
	// details add what it refused ({"refused": [...]}).
	BackupRestoreRefused Action = "backup.restore_refused"
)

// The actions on webhook endpoints. A secret roll's details hold until when
// the previous secret signs too, never a secret.
const (
	WebhookCreated      Action = "webhook.created"
	WebhookChanged      Action = "webhook.changed" // url, events, description or paused, by staff
	WebhookDeleted      Action = "webhook.deleted"
	WebhookSecretRolled Action = "webhook.secret_rolled"
	WebhookPaused       Action = "webhook.paused" // by the service: after failing for days, or at a 410 Gone
	WebhookEventResent  Action = "webhook.event_resent"
	WebhookTestSent     Action = "webhook.test_sent"
	// The service sealed the secrets it found in plaintext at a start with
	// a key (internal/atrest); its details count the endpoints
	// ({"endpoints": n}), never a secret.
	WebhookSecretsSealed Action = "webhook.secrets_sealed"
)

// The action of `petstore secrets rotate-key`: every secret at rest sealed
// anew under the new key, and PocketBase's settings with them, in one
// transaction. Its details count the endpoints ({"endpoints": n}) and say
// whether the settings were encrypted ({"settings": true}).
const (
	SecretsKeyRotated Action = "secrets.key_rotated"
)

// The actions of cluster mode, by the service (System): a node became the
// leader and serves (its details name the term and the node), or a leader
// handed the leadership over.
const (
	ClusterPromoted    Action = "cluster.promoted"
	ClusterSteppedDown Action = "cluster.stepped_down"
)

// The actions on categories, which staff name in the dashboard, on the staff
// page or with the categories command. Their details hold the name:
// {"name": {"old": …, "new": …}}, without "old" for a creation and without
// "new" for a deletion.
const (
	CategoryCreated Action = "category.created"
	CategoryRenamed Action = "category.renamed"
	CategoryDeleted Action = "category.deleted"
)

// The actions on customers, which staff manage on the staff page, in the
// dashboard or with the customers command. Their details hold the values
// before and after of the fields that changed ({"name": {"old": …, "new":
// …}}, the whole customer for a creation or a deletion); a plan's change
// lists the keys that moved with it ({"keys": [ids]}).
const (
	CustomerCreated Action = "customer.created"
	CustomerChanged Action = "customer.changed" // name, contact, notes or plan
	CustomerDeleted Action = "customer.deleted"
)

// The action of the service (System) when a key crosses 80 % or 100 % of
// its day quota (package usage), once per key, UTC day and threshold. Its
// details: {"threshold": 80 or 100, "day": "YYYY-MM-DD", "limit": n,
// "used": n, "resetsAt": RFC 3339}.
const (
	UsageThreshold Action = "usage.threshold"
)

// The action of staff exporting the usage history as CSV from the staff
// page. Its details hold what was asked: {"from": …, "to": …, "by": "hour"
// or "day", "per": "key" or "customer"}; the record names the key or the
// customer when the export is of one only.
const (
	UsageExported Action = "usage.exported"
)

// Actions are every action above, so that a count of records by action can
// show each at 0 from the start (TestActionsListsEveryAction holds the list
// to the constants).
var Actions = []Action{
	KeyCreated, KeyRolled, KeyRevoked, KeyExpiryChanged, KeyBanLifted, KeyBanned, KeyScopesChanged, KeyQuotaChanged,
	PlanChanged,
	BackupCreated, BackupDownloaded, BackupUploaded, BackupRestored, BackupDeleted, BackupRestoreRefused,
	WebhookCreated, WebhookChanged, WebhookDeleted, WebhookSecretRolled, WebhookPaused, WebhookEventResent, WebhookTestSent, WebhookSecretsSealed,
	SecretsKeyRotated,
	CategoryCreated, CategoryRenamed, CategoryDeleted,
	CustomerCreated, CustomerChanged, CustomerDeleted, KeyCustomerChanged,
	ClusterPromoted, ClusterSteppedDown,
	UsageThreshold, UsageExported,
}

// Actors that are not a superuser. A superuser acts as its record id, with
// its email beside it.
const (
	ActorCLI    = "cli"    // the keys, categories and customers commands, on the server's own machine
	ActorSystem = "system" // the service itself: the limiter's bans, the webhooks' pauses, the usage thresholds
)

// Actor is who made a change.
type Actor struct {
	ID        string // a superuser's record id, ActorCLI or ActorSystem
	Email     string // a superuser's
	Address   string // the client's address, for a change over HTTP
	RequestID string // the request's id (Request-Id), for a change over HTTP
}

// The actors that are not a superuser.
var (
	CLI    = Actor{ID: ActorCLI}
	System = Actor{ID: ActorSystem}
)

// Entry is one record of the trail.
type Entry struct {
	Action   Action
	Key      string // the api_keys record id, for a key's change
	Webhook  string // the webhook_endpoints record id, for an endpoint's change
	Category string // the category's number, for a category's change
	Customer string // the customers record id, for a customer's change
	By       Actor
	Details  map[string]any // the values before and after: {"field": {"old": …, "new": …}}
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
	r.Set(CategoryField, e.Category)
	r.Set(CustomerField, e.Customer)
	r.Set(ActorField, e.By.ID)
	r.Set(ActorEmailField, e.By.Email)
	r.Set(AddressField, e.By.Address)
	r.Set(RequestIDField, e.By.RequestID)
	limit := core.DefaultJSONFieldMaxSize
	if f, ok := collection.Fields.GetByName(DetailsField).(*core.JSONField); ok {
		limit = f.CalculateMaxBodySize()
	}
	details, err := boundDetails(e.Details, int(limit))
	if err != nil {
		return err
	}
	r.Set(DetailsField, details)
	return app.Save(r)
}

// boundDetails is details as JSON (without HTML escaping: "&" is one byte,
// not six) within limit bytes, the details field's size: when they are
// longer, every string value longer than the longest length that fits is
// cut to it and ends with a marker saying how much was cut. Every member
// stays, so a change is always recorded, its long values in part.
func boundDetails(details map[string]any, limit int) (types.JSONRaw, error) {
	whole, err := encodeJSON(details)
	if err != nil || len(whole) <= limit {
		return whole, err
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(whole))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	// The longest length that fits, by bisection: a shorter one cuts more.
	lo, hi := 0, len(whole)
	best, err := encodeJSON(cutStrings(tree, 0))
	if err != nil {
		return nil, err
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b, err := encodeJSON(cutStrings(tree, mid))
		if err != nil {
			return nil, err
		}
		if len(b) <= limit {
			lo, best = mid, b
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

func encodeJSON(v any) (types.JSONRaw, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// cutStrings is v with each string longer than n bytes cut to at most n
// (whole characters) and marked.
func cutStrings(v any, n int) any {
	switch v := v.(type) {
	case string:
		if len(v) <= n {
			return v
		}
		kept := strings.ToValidUTF8(v[:n], "")
		return fmt.Sprintf("%s…[%d bytes cut]", kept, len(v)-len(kept))
	case map[string]any:
		cut := make(map[string]any, len(v))
		for k, e := range v {
			cut[k] = cutStrings(e, n)
		}
		return cut
	case []any:
		cut := make([]any, len(v))
		for i, e := range v {
			cut[i] = cutStrings(e, n)
		}
		return cut
	}
	return v
}

// ForLog is a record's details as its console line shows them: every
// string that is a URL without its user info and query, which may hold a
// receiver's token (https://hooks.example.org/in?token=…). The record
// keeps the whole URL for staff.
func ForLog(details []byte) string {
	var v any
	if json.Unmarshal(details, &v) != nil {
		return string(details)
	}
	b, err := json.Marshal(redactURLs(v))
	if err != nil {
		return string(details)
	}
	return string(b)
}

func redactURLs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = redactURLs(x)
		}
	case []any:
		for i, x := range v {
			v[i] = redactURLs(x)
		}
	case string:
		if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" && (u.User != nil || u.RawQuery != "" || u.Fragment != "") {
			u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
			return u.String() + "?…"
		}
	}
	return v
}
