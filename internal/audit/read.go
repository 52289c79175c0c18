package audit

import (
	"encoding/json"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Recorded is an entry as the trail holds it.
type Recorded struct {
	Entry
	ID      string
	Created time.Time
}

// recordedOf is the entry r holds.
func recordedOf(r *core.Record) (Recorded, error) {
	e := Recorded{
		Entry: Entry{
			Action:   Action(r.GetString(ActionField)),
			Key:      r.GetString(KeyField),
			Webhook:  r.GetString(WebhookField),
			Customer: r.GetString(CustomerField),
			By:       Actor{ID: r.GetString(ActorField), Email: r.GetString(ActorEmailField), Address: r.GetString(AddressField)},
		},
		ID:      r.Id,
		Created: r.GetDateTime(CreatedField).Time(),
	}
	if raw := r.GetString(DetailsField); raw != "" && raw != "null" {
		if err := json.Unmarshal([]byte(raw), &e.Details); err != nil {
			return e, err
		}
	}
	return e, nil
}

// History is a page of one key's or endpoint's entries, newest first, and
// how many it has in all.
type History struct {
	Entries []Recorded
	Total   int
}

// ForKey returns page (from 1) of the entries of the api_keys record key,
// perPage a page, newest first.
func ForKey(app core.App, key string, page, perPage int) (History, error) {
	return historyOf(app, dbx.HashExp{KeyField: key}, page, perPage)
}

// ForWebhook returns page (from 1) of the entries of the webhook_endpoints
// record id, perPage a page, newest first; those of a deleted endpoint too.
func ForWebhook(app core.App, id string, page, perPage int) (History, error) {
	return historyOf(app, dbx.HashExp{WebhookField: id}, page, perPage)
}

// ForCustomer returns page (from 1) of the entries of the customers record
// id, perPage a page, newest first; those of a deleted customer too.
func ForCustomer(app core.App, id string, page, perPage int) (History, error) {
	return historyOf(app, dbx.HashExp{CustomerField: id}, page, perPage)
}

func historyOf(app core.App, of dbx.HashExp, page, perPage int) (History, error) {
	var h History
	if err := app.RecordQuery(Collection).Select("count(*)").Where(of).Row(&h.Total); err != nil {
		return h, err
	}
	var records []*core.Record
	err := app.RecordQuery(Collection).Where(of).
		OrderBy(CreatedField+" DESC", "rowid DESC").
		Limit(int64(perPage)).Offset(int64(page-1) * int64(perPage)).All(&records)
	if err != nil {
		return h, err
	}
	h.Entries = make([]Recorded, len(records))
	for i, r := range records {
		if h.Entries[i], err = recordedOf(r); err != nil {
			return h, err
		}
	}
	return h, nil
}
