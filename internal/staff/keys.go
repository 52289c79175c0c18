package staff

import (
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
)

func handleListKeys(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		records, err := apikeys.List(e.App)
		if err != nil {
			return err
		}
		now := time.Now()
		today, err := history.Today(now)
		if err != nil {
			return err
		}
		views := make([]keyView, len(records))
		for i, r := range records {
			views[i] = viewOf(r, now)
			views[i].Today = today[r.Id]
		}
		return e.JSON(http.StatusOK, views)
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
	key, r, err := apikeys.Create(e.App, nk)
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
	if _, err := apikeys.Change(e.App, e.Request.PathValue("id"), c); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleRollKey(e *core.RequestEvent) error {
	var body rollRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	grace, err := body.grace()
	if err != nil {
		return err
	}
	key, r, err := apikeys.Roll(e.App, e.Request.PathValue("id"), grace)
	if err != nil {
		return storeError(err)
	}
	return answerWithKey(e, r.Id, key)
}

func handleRevokeKey(e *core.RequestEvent) error {
	if err := apikeys.Revoke(e.App, e.Request.PathValue("id")); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleLiftBan(e *core.RequestEvent) error {
	if err := apikeys.Unban(e.App, e.Request.PathValue("id")); err != nil {
		return storeError(err)
	}
	return answerWithView(e, e.Request.PathValue("id"))
}

func handleUsage(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		days, err := parseDays(e.Request.URL.Query())
		if err != nil {
			return err
		}
		r, err := apikeys.Get(e.App, e.Request.PathValue("id"))
		if err != nil {
			return storeError(err)
		}
		h, err := history.History(r.Id, days, time.Now())
		if err != nil {
			return err
		}
		return e.JSON(http.StatusOK, h)
	}
}

// answerWithKey answers 201 with the key's view and, this once, the key.
func answerWithKey(e *core.RequestEvent, id, key string) error {
	r, err := apikeys.Get(e.App, id)
	if err != nil {
		return err
	}
	return e.JSON(http.StatusCreated, struct {
		keyView
		Key string `json:"key"`
	}{viewOf(r, time.Now()), key})
}

func answerWithView(e *core.RequestEvent, id string) error {
	r, err := apikeys.Get(e.App, id)
	if err != nil {
		return storeError(err)
	}
	return e.JSON(http.StatusOK, viewOf(r, time.Now()))
}
