package staff

import (
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/usage"
)

// keyList is a page of keys with what places it: PocketBase's list shape
// (page, perPage, totalItems, totalPages, items), where totalItems counts
// the keys matching the search and the state, plus totalKeys, all keys.
type keyList struct {
	Page       int       `json:"page"`
	PerPage    int       `json:"perPage"`
	TotalItems int       `json:"totalItems"`
	TotalPages int       `json:"totalPages"`
	TotalKeys  int       `json:"totalKeys"`
	Items      []keyView `json:"items"`
}

func handleListKeys(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		q, err := listQuery(e.Request.URL.RawQuery)
		if err != nil {
			return err
		}
		now := time.Now()
		page, err := apikeys.Search(e.App, q, now)
		if err != nil {
			return storeError(err)
		}
		ids := make([]string, len(page.Keys))
		for i, r := range page.Keys {
			ids[i] = r.Id
		}
		today, err := history.Today(now, ids...)
		if err != nil {
			return storeError(err)
		}
		list := keyList{
			Page: q.Page, PerPage: q.PerPage, TotalItems: page.Matching, TotalKeys: page.Total,
			TotalPages: (page.Matching + q.PerPage - 1) / q.PerPage,
			Items:      make([]keyView, len(page.Keys)),
		}
		for i, r := range page.Keys {
			list.Items[i] = viewOf(r, now)
			list.Items[i].Today = todayOf(today[r.Id])
		}
		return writeJSON(e, http.StatusOK, list)
	}
}

func handleCreateKey(e *core.RequestEvent) error {
	var body createRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	nk, err := body.newKey()
	if err != nil {
		return err
	}
	key, r, err := apikeys.Create(e.App, nk, audit.ActorOf(e))
	if err != nil {
		return storeError(err)
	}
	return answerWithKey(e, r.Id, key)
}

func handleChangeKey(e *core.RequestEvent) error {
	var body changeRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	c, err := body.changes()
	if err != nil {
		return err
	}
	if _, err := apikeys.Change(e.App, e.Request.PathValue("id"), c, audit.ActorOf(e)); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleRollKey(e *core.RequestEvent) error {
	var body rollRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	key, r, err := apikeys.Roll(e.App, e.Request.PathValue("id"), body.grace(), audit.ActorOf(e))
	if err != nil {
		return storeError(err)
	}
	return answerWithKey(e, r.Id, key)
}

func handleRevokeKey(e *core.RequestEvent) error {
	if err := apikeys.Revoke(e.App, e.Request.PathValue("id"), audit.ActorOf(e)); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleLiftBan(e *core.RequestEvent) error {
	if err := apikeys.Unban(e.App, e.Request.PathValue("id"), audit.ActorOf(e)); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleUsage(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		days, err := parseDays(e.Request.URL.RawQuery)
		if err != nil {
			return err
		}
		r, err := apikeys.Get(e.App, e.Request.PathValue("id"))
		if err != nil {
			return storeError(err)
		}
		h, err := history.History(r.Id, days, time.Now())
		if err != nil {
			return storeError(err)
		}
		return writeJSON(e, http.StatusOK, h)
	}
}

// chartHours is how many hours the hourly charts show.
const chartHours = 48

// handleKeyHours answers the key's use in each of the last chartHours UTC
// hours, oldest first.
func handleKeyHours(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		r, err := apikeys.Get(e.App, e.Request.PathValue("id"))
		if err != nil {
			return storeError(err)
		}
		h, err := history.Hours([]string{r.Id}, chartHours, time.Now())
		if err != nil {
			return storeError(err)
		}
		return writeJSON(e, http.StatusOK, h)
	}
}

func handleHistory(e *core.RequestEvent) error {
	page, perPage, err := historyQuery(e.Request.URL.RawQuery)
	if err != nil {
		return err
	}
	// By the id alone, as an endpoint's: the trail of a key deleted by an
	// older petstore (the dashboard deletes none now) outlives it.
	id := e.Request.PathValue("id")
	h, err := audit.ForKey(e.App, id, page, perPage)
	if err != nil {
		return storeError(err)
	}
	if h.Total == 0 {
		if _, err := apikeys.Get(e.App, id); err != nil {
			return storeError(err)
		}
	}
	return writeHistory(e, h, page, perPage)
}

// writeHistory answers a page of a key's or endpoint's audit trail.
func writeHistory(e *core.RequestEvent, h audit.History, page, perPage int) error {
	list := historyList{
		Page: page, PerPage: perPage, TotalItems: h.Total, TotalPages: (h.Total + perPage - 1) / perPage,
		Items: make([]historyView, len(h.Entries)),
	}
	for i, entry := range h.Entries {
		list.Items[i] = historyOf(entry)
	}
	return writeJSON(e, http.StatusOK, list)
}

// answerWithKey answers 201 with the key's view and, this once, the key.
func answerWithKey(e *core.RequestEvent, id, key string) error {
	r, err := apikeys.Get(e.App, id)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(e, http.StatusCreated, struct {
		keyView
		Key string `json:"key"`
	}{viewOf(r, time.Now()), key})
}

func answerWithView(e *core.RequestEvent, id string) error {
	r, err := apikeys.Get(e.App, id)
	if err != nil {
		return storeError(err)
	}
	return writeJSON(e, http.StatusOK, viewOf(r, time.Now()))
}
