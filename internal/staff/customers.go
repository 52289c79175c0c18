package staff

import (
	"errors"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/customers"
	"petstore/internal/usage"
)

// customerRequest is the body that makes or changes a customer: its plan
// by name. In a change, a member left out leaves its field as it is.
type customerRequest struct {
	Name    *string `json:"name"`
	Contact *string `json:"contact"`
	Notes   *string `json:"notes"`
	Plan    *string `json:"plan"`
}

func (r customerRequest) input() customers.Input {
	return customers.Input{Name: r.Name, Contact: r.Contact, Notes: r.Notes, Plan: r.Plan}
}

// customerView is a customer with its keys, each as the keys' list shows
// it, today's use included.
type customerView struct {
	customers.Summary
	KeyList []keyView `json:"keyList"`
}

// assignRequest gives a key to a customer (its id or name), or to none ("").
type assignRequest struct {
	Customer string `json:"customer"`
}

// customerItem is a customer in the list, with its keys' use today: the
// sum of what the keys' list shows for each of them.
type customerItem struct {
	customers.Summary
	Today todayView `json:"today"`
}

// handleListCustomers answers every customer, by name, with its plan, how
// many keys it has that are not revoked, and their use today.
func handleListCustomers(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		list, err := customers.List(e.App)
		if err != nil {
			return storeError(err)
		}
		owners, err := apikeys.Customers(e.App)
		if err != nil {
			return storeError(err)
		}
		today, err := history.Today(time.Now())
		if err != nil {
			return storeError(err)
		}
		sums := map[string]usage.Counts{}
		for key, c := range today {
			if owner := owners[key]; owner != "" {
				sums[owner] = sums[owner].Plus(c)
			}
		}
		items := make([]customerItem, len(list))
		for i, c := range list {
			items[i] = customerItem{Summary: c, Today: todayOf(sums[c.ID])}
		}
		return writeJSON(e, http.StatusOK, map[string]any{"items": items})
	}
}

func handleCreateCustomer(e *core.RequestEvent) error {
	var body customerRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	c, err := customers.Create(e.App, body.input(), audit.ActorOf(e))
	if err != nil {
		return customerError(err)
	}
	return answerWithCustomer(e, http.StatusCreated, c.Id, nil)
}

func handleChangeCustomer(e *core.RequestEvent) error {
	var body customerRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	c, err := customers.Change(e.App, e.Request.PathValue("id"), body.input(), audit.ActorOf(e))
	if err != nil {
		return customerError(err)
	}
	return answerWithCustomer(e, http.StatusOK, c.Id, nil)
}

func handleShowCustomer(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		return answerWithCustomer(e, http.StatusOK, e.Request.PathValue("id"), history)
	}
}

// handleCustomerHours answers the use of the customer's keys, revoked ones
// included, in each of the last chartHours UTC hours, oldest first.
func handleCustomerHours(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		ids, err := customerKeys(e)
		if err != nil {
			return err
		}
		h, err := history.Hours(ids, chartHours, time.Now())
		if err != nil {
			return storeError(err)
		}
		return writeJSON(e, http.StatusOK, h)
	}
}

// customerKeys is the record id of every key of the customer the path
// names, revoked ones included; 404 for no customer.
func customerKeys(e *core.RequestEvent) ([]string, error) {
	c, err := customers.Find(e.App, e.Request.PathValue("id"))
	if err != nil {
		return nil, customerError(err)
	}
	ids, err := customers.KeyIDs(e.App, c.Id)
	if err != nil {
		return nil, storeError(err)
	}
	return ids, nil
}

// handleCustomerHistory answers a page of a customer's audit trail, newest
// first; a deleted customer's too.
func handleCustomerHistory(e *core.RequestEvent) error {
	page, perPage, err := historyQuery(e.Request.URL.RawQuery)
	if err != nil {
		return err
	}
	id := e.Request.PathValue("id")
	h, err := audit.ForCustomer(e.App, id, page, perPage)
	if err != nil {
		return storeError(err)
	}
	if h.Total == 0 {
		if _, err := customers.Find(e.App, id); err != nil {
			return customerError(err)
		}
	}
	return writeHistory(e, h, page, perPage)
}

// handleAssignKey gives the key to a customer, or to none, and answers the
// key's view.
func handleAssignKey(e *core.RequestEvent) error {
	var body assignRequest
	if err := decodeBody(e, &body); err != nil {
		return err
	}
	k, err := customers.Assign(e.App, e.Request.PathValue("id"), body.Customer, audit.ActorOf(e))
	if errors.Is(err, customers.ErrNotFound) {
		return memberError("customer", "validation_customer_rule", "no customer has the id or name %q", body.Customer)
	}
	if err != nil {
		return storeError(err)
	}
	return answerWithView(e, k.Id)
}

// answerWithCustomer answers the customer ref with its keys; with history,
// their use today too.
func answerWithCustomer(e *core.RequestEvent, status int, ref string, history *usage.Recorder) error {
	c, keys, err := customers.Show(e.App, ref)
	if err != nil {
		return customerError(err)
	}
	now := time.Now()
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.Id
	}
	var today map[string]usage.Counts
	if history != nil {
		if today, err = history.Today(now, ids...); err != nil {
			return storeError(err)
		}
	}
	v := customerView{Summary: c, KeyList: make([]keyView, len(keys))}
	for i, k := range keys {
		v.KeyList[i] = viewOf(k, now)
		v.KeyList[i].Today = todayOf(today[k.Id])
	}
	return writeJSON(e, status, v)
}

// customerError is err as the answer: an unknown customer as 404, anything
// else as storeError says.
func customerError(err error) error {
	if errors.Is(err, customers.ErrNotFound) {
		return router.NewNotFoundError("No such customer.", nil)
	}
	return storeError(err)
}
