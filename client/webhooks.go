package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// EventType is a webhook event's type (docs/webhooks.md).
type EventType string

// The event types the service sends.
const (
	EventPetCreated         EventType = "pet.created"           // Data: Pet
	EventKeyCreated         EventType = "key.created"           // Data: KeyChange
	EventKeyRolled          EventType = "key.rolled"            // Data: KeyChange
	EventKeyRevoked         EventType = "key.revoked"           // Data: KeyChange
	EventKeyBanned          EventType = "key.banned"            // Data: KeyChange
	EventKeyDayQuotaReached EventType = "key.day_quota_reached" // Data: KeyChange
	EventUsageThreshold     EventType = "usage.threshold"       // Data: UsageThreshold
	EventPlanChanged        EventType = "plan.changed"          // Data: PlanChange
	EventCategoryCreated    EventType = "category.created"      // Data: CategoryChange
	EventCategoryRenamed    EventType = "category.renamed"      // Data: CategoryRename
	EventCategoryDeleted    EventType = "category.deleted"      // Data: CategoryChange
	EventWebhookTest        EventType = "webhook.test"          // Data: WebhookTest
)

// Event is a verified webhook delivery.
type Event struct {
	// ID is the delivery's webhook-id: the same on every attempt of one
	// event, so a receiver drops a repeat by it.
	ID        string          `json:"-"`
	Type      EventType       `json:"type"`
	Timestamp time.Time       `json:"timestamp"` // when it happened
	Data      json.RawMessage `json:"data"`      // decode it with DecodeData into the type Type names
}

// DecodeData decodes the event's data into v: a *Pet for pet.created, a
// *KeyChange for the key events, and so on (see the EventType constants).
func (e Event) DecodeData(v any) error { return json.Unmarshal(e.Data, v) }

// KeyChange is an API key after a key event; never the key, its hash or
// its prefix.
type KeyChange struct {
	ID    string `json:"id"`    // the key's record id
	Name  string `json:"name"`  // who uses the key
	Plan  string `json:"plan"`  // the name of its plan
	State string `json:"state"` // active, revoked, expired or banned
}

// UsageThreshold is usage.threshold's data: a key crossed 80 % or 100 %
// of its day quota (once per key, UTC day and threshold).
type UsageThreshold struct {
	Key KeyChange `json:"key"`
	// Customer owns the key; nil when none does.
	Customer *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"customer"`
	Threshold int       `json:"threshold"` // 80 or 100
	Window    string    `json:"window"`    // "day"
	Day       string    `json:"day"`       // the UTC day, YYYY-MM-DD
	Limit     int64     `json:"limit"`     // the day quota
	Used      int64     `json:"used"`      // requests the window held after the crossing request
	ResetsAt  time.Time `json:"resetsAt"`  // when the window starts again
}

// PlanChange is a plan after plan.changed, and what changed.
type PlanChange struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	PerMinute int64  `json:"perMinute"`
	PerDay    int64  `json:"perDay"`
	// Changes holds each changed field (name, per_minute, per_day,
	// ban_after, ban_minutes, counted): its old and new value as stored text.
	Changes map[string]struct {
		Old string `json:"old"`
		New string `json:"new"`
	} `json:"changes"`
}

// CategoryChange is a category after category.created, or as it was
// before category.deleted.
type CategoryChange struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// CategoryRename is a category after category.renamed, with the name it
// had.
type CategoryRename struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	PreviousName string `json:"previousName"`
}

// WebhookTest is the data of webhook.test: the endpoint it was sent to.
type WebhookTest struct {
	Endpoint string `json:"endpoint"`
}

// DefaultWebhookTolerance is how far a delivery's webhook-timestamp may be
// from the receiver's clock, as Standard Webhooks' libraries allow: an
// older delivery may be a replay of a captured one.
const DefaultWebhookTolerance = 5 * time.Minute

// WebhookVerifier checks webhook deliveries as Standard Webhooks define
// them: webhook-signature holds, for the delivery, "v1," and the base64
// HMAC-SHA256 of "webhook-id.webhook-timestamp.body" keyed with a secret,
// and webhook-timestamp is within the tolerance of now.
type WebhookVerifier struct {
	keys      [][]byte
	tolerance time.Duration
	now       func() time.Time
}

// NewWebhookVerifier returns a verifier of deliveries signed with any of
// secrets ("whsec_" and base64, as the staff page shows them; two during a
// secret's roll).
func NewWebhookVerifier(secrets ...string) (*WebhookVerifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("petstore client: no webhook secret")
	}
	v := &WebhookVerifier{tolerance: DefaultWebhookTolerance, now: time.Now}
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, errors.New("petstore client: a webhook secret is whsec_ and base64")
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// WebhookError is why Verify refused a delivery; answer it 400, and do
// nothing it asks.
type WebhookError struct {
	Reason string
}

func (e *WebhookError) Error() string { return "petstore webhook: " + e.Reason }

// Verify checks a delivery's headers and body (read whole, as it came)
// and returns its event. Refused: a missing header, a timestamp beyond the
// tolerance, no signature that matches, or a body that is not an event.
func (v *WebhookVerifier) Verify(header http.Header, body []byte) (Event, error) {
	id, ts, sigs := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return Event{}, &WebhookError{Reason: "the webhook-id, webhook-timestamp or webhook-signature header is missing"}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Event{}, &WebhookError{Reason: "webhook-timestamp is not a Unix time"}
	}
	if d := v.now().Sub(time.Unix(sec, 0)); d > v.tolerance || d < -v.tolerance {
		return Event{}, &WebhookError{Reason: fmt.Sprintf("webhook-timestamp is %v from now, beyond %v", d.Round(time.Second), v.tolerance)}
	}
	if !v.signed(id, ts, body, sigs) {
		return Event{}, &WebhookError{Reason: "no webhook-signature matches the secret"}
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil || e.Type == "" {
		return Event{}, &WebhookError{Reason: "the body is not an event"}
	}
	e.ID = id
	return e, nil
}

// signed tells whether any of sigs' "v1," signatures is one of the keys'.
func (v *WebhookVerifier) signed(id, ts string, body []byte, sigs string) bool {
	for _, key := range v.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for sig := range strings.FieldsSeq(sigs) {
			b64, ok := strings.CutPrefix(sig, "v1,")
			if !ok {
				continue
			}
			if got, err := base64.StdEncoding.DecodeString(b64); err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}
