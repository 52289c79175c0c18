package staff

import (
	"errors"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/audit"
	"petstore/internal/webhooks"
)

// Webhooks is what the webhook routes need: the outbox (test events, and
// the deliverer woken for a resent event) and which targets are allowed.
// Staff's changes are in the audit trail, which logs each; the outbox reads
// the subscriptions again at its next event after any change.
type Webhooks struct {
	Outbox  *webhooks.Outbox
	Targets webhooks.Targets
}

// maxAttemptsListed bounds the attempts listed.
const maxAttemptsListed = 100

func webhookError(err error) error {
	if errors.Is(err, webhooks.ErrNotFound) {
		return router.NewNotFoundError("No such webhook endpoint or event.", nil)
	}
	return storeError(err)
}

func (w Webhooks) list(e *core.RequestEvent) error {
	list, err := webhooks.List(e.App)
	if err != nil {
		return webhookError(err)
	}
	if list == nil {
		list = []webhooks.Endpoint{}
	}
	return writeJSON(e, http.StatusOK, map[string]any{"items": list, "types": webhooks.Types})
}

func (w Webhooks) get(e *core.RequestEvent) error {
	ep, err := webhooks.Get(e.App, e.Request.PathValue("id"))
	if err != nil {
		return webhookError(err)
	}
	return writeJSON(e, http.StatusOK, ep)
}

func (w Webhooks) create(e *core.RequestEvent) error {
	var in webhooks.Input
	if err := decodeBody(e, &in); err != nil {
		return err
	}
	id, secret, err := webhooks.Create(e.Request.Context(), e.App, w.Targets, in, audit.ActorOf(e))
	if err != nil {
		return webhookError(err)
	}
	return writeJSON(e, http.StatusCreated, map[string]string{"id": id, "secret": secret})
}

func (w Webhooks) change(e *core.RequestEvent) error {
	var in webhooks.Input
	if err := decodeBody(e, &in); err != nil {
		return err
	}
	id := e.Request.PathValue("id")
	if err := webhooks.Change(e.Request.Context(), e.App, w.Targets, id, in, audit.ActorOf(e)); err != nil {
		return webhookError(err)
	}
	return w.get(e)
}

func (w Webhooks) remove(e *core.RequestEvent) error {
	id := e.Request.PathValue("id")
	if err := webhooks.Delete(e.App, id, audit.ActorOf(e)); err != nil {
		return webhookError(err)
	}
	return e.NoContent(http.StatusNoContent)
}

func (w Webhooks) roll(e *core.RequestEvent) error {
	var body rollRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	id := e.Request.PathValue("id")
	secret, err := webhooks.Roll(e.App, id, body.grace(), audit.ActorOf(e))
	if err != nil {
		return webhookError(err)
	}
	return writeJSON(e, http.StatusOK, map[string]string{"id": id, "secret": secret})
}

func (w Webhooks) test(e *core.RequestEvent) error {
	id := e.Request.PathValue("id")
	if err := w.Outbox.SendTest(e.App, id, audit.ActorOf(e)); err != nil {
		return webhookError(err)
	}
	return e.NoContent(http.StatusAccepted)
}

func (w Webhooks) attempts(e *core.RequestEvent) error {
	q, err := parseQuery(e.Request.URL.RawQuery)
	if err != nil {
		return err
	}
	limit, err := wholeNumber(q, "limit", 20, maxAttemptsListed)
	if err != nil || len(q["limit"]) > 1 {
		return badRequest("limit must be a whole number from 1 to %d, given once", maxAttemptsListed)
	}
	list, err := webhooks.Attempts(e.App, e.Request.PathValue("id"), limit)
	if err != nil {
		return webhookError(err)
	}
	return writeJSON(e, http.StatusOK, map[string]any{"items": list})
}

// history is an endpoint's audit trail, newest first, a page at a time;
// a deleted endpoint's too, which only its records know of.
func (w Webhooks) history(e *core.RequestEvent) error {
	page, perPage, err := historyQuery(e.Request.URL.RawQuery)
	if err != nil {
		return err
	}
	id := e.Request.PathValue("id")
	h, err := audit.ForWebhook(e.App, id, page, perPage)
	if err != nil {
		return storeError(err)
	}
	if h.Total == 0 {
		if _, err := webhooks.Get(e.App, id); err != nil {
			return webhookError(err)
		}
	}
	return writeHistory(e, h, page, perPage)
}

func (w Webhooks) resend(e *core.RequestEvent) error {
	id := e.Request.PathValue("id")
	if err := webhooks.Resend(e.App, id, e.Request.PathValue("event"), audit.ActorOf(e)); err != nil {
		return webhookError(err)
	}
	w.Outbox.Wake()
	return e.NoContent(http.StatusAccepted)
}
