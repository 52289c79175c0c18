package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/atrest"
	"petstore/internal/audit"
	"petstore/internal/fielderr"
	"petstore/internal/rollgrace"
	"petstore/internal/strictinput"
)

// Endpoint is an endpoint as staff see it: never its secrets.
type Endpoint struct {
	ID            string    `json:"id"`
	URL           string    `json:"url"`
	Events        []Type    `json:"events"`
	Description   string    `json:"description"`
	Paused        bool      `json:"paused"`
	PausedReason  string    `json:"pausedReason"`
	FailingSince  string    `json:"failingSince"`  // RFC 3339; empty: not failing
	PreviousUntil string    `json:"previousUntil"` // the previous secret signs too until then; empty: none
	Pending       int64     `json:"pending"`       // events not delivered yet
	Failed        int64     `json:"failed"`        // events whose attempts all failed
	Created       time.Time `json:"created"`
}

// Input is what staff send to create or change an endpoint; nil members
// are not changed.
type Input struct {
	URL         *string `json:"url"`
	Events      *[]Type `json:"events"`
	Description *string `json:"description"`
	Paused      *bool   `json:"paused"`
}

// The kinds of staff's mistakes in an endpoint's input, one per member;
// each *fielderr.Error's message names its member.
var (
	errBadURL         = &fielderr.Kind{Code: "validation_invalid_url"}
	errBadEvents      = &fielderr.Kind{Code: "validation_invalid_events"}
	errBadDescription = &fielderr.Kind{Code: "validation_invalid_description"}
)

// ErrNotFound is the error of an endpoint or event that does not exist.
var ErrNotFound = errors.New("webhooks: no such endpoint or event")

func (in Input) apply(ctx context.Context, r *endpointRecord, t Targets, creating bool) error {
	if in.URL != nil || creating {
		if in.URL == nil {
			return fielderr.New(errBadURL, "url", "a url is required: the endpoint's http or https URL")
		}
		u := strings.TrimSpace(*in.URL)
		if len(u) > 2048 {
			return fielderr.New(errBadURL, "url", "the url is longer than 2048 characters")
		}
		if err := t.CheckURL(ctx, u); err != nil {
			msg := err.Error()
			if errors.Is(err, ErrForbiddenTarget) {
				msg = "the URL's host is, or resolves to, a loopback, private, link-local, CGNAT, metadata, documentation " +
					"or reserved address, or this host's own: for a receiver on this machine or its network, start serve with " +
					"--webhooks-allow-private"
			}
			return fielderr.New(errBadURL, "url", "%s", msg)
		}
		r.SetURL(u)
	}
	if in.Events != nil || creating {
		if in.Events == nil || len(*in.Events) == 0 {
			return fielderr.New(errBadEvents, "events", "at least one event type is required in events: %s", typeNames())
		}
		var events []Type
		for _, t := range *in.Events {
			if !slices.Contains(Types, t) {
				return fielderr.New(errBadEvents, "events", "%q in events is no event type; the types are %s", t, typeNames())
			}
			if !slices.Contains(events, t) {
				events = append(events, t)
			}
		}
		r.SetEvents(events)
	}
	if in.Description != nil {
		if len(*in.Description) > 200 {
			return fielderr.New(errBadDescription, "description", "the description is longer than 200 characters")
		}
		if i := strings.IndexFunc(*in.Description, strictinput.Unprintable); i >= 0 {
			r, _ := utf8.DecodeRuneInString((*in.Description)[i:])
			return fielderr.New(errBadDescription, "description", "the description holds U+%04X, a control, format or invisible character", r)
		}
		r.SetDescription(*in.Description)
	}
	if in.Paused != nil {
		r.SetPaused(*in.Paused)
	}
	return nil
}

func typeNames() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// Create adds an endpoint, audited as by's in the same transaction; it
// returns its id and its secret, which nothing shows again.
func Create(ctx context.Context, app core.App, t Targets, in Input, by audit.Actor) (id, secret string, err error) {
	r, err := newEndpointRecord(app)
	if err != nil {
		return "", "", err
	}
	if err := in.apply(ctx, r, t, true); err != nil {
		return "", "", err
	}
	key, err := atrest.FromEnv(app)
	if err != nil {
		return "", "", err
	}
	if secret, err = NewSecret(); err != nil {
		return "", "", err
	}
	if err := r.SetSecret(key, secret, 0); err != nil {
		return "", "", err
	}
	err = app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(r); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookCreated, Webhook: r.Id, By: by, Details: r.audited()})
	})
	if err != nil {
		return "", "", err
	}
	return r.Id, secret, nil
}

// Change changes an endpoint; a change of its audited fields is audited as
// by's, with their old and new values, in the same transaction.
func Change(ctx context.Context, app core.App, t Targets, id string, in Input, by audit.Actor) error {
	r, err := findEndpointRecord(app, id)
	if err != nil {
		return err
	}
	before := r.audited()
	if err := in.apply(ctx, r, t, false); err != nil {
		return err
	}
	details := map[string]any{}
	after := r.audited()
	for _, f := range auditedFields {
		if old, new := before[f], after[f]; fmt.Sprint(old) != fmt.Sprint(new) {
			details[f] = map[string]any{"old": old, "new": new}
		}
	}
	return app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(r); err != nil {
			return err
		}
		if len(details) == 0 {
			return nil
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookChanged, Webhook: id, By: by, Details: details})
	})
}

// Delete removes an endpoint with its events and their attempts, audited
// as by's, with what the endpoint was, in one transaction. Its audit records
// stay. The history goes by two plain DELETEs: the record's cascade would
// load, and delete through every hook, each of its perhaps millions of rows,
// one at a time.
func Delete(app core.App, id string, by audit.Actor) error {
	r, err := findEndpointRecord(app, id)
	if err != nil {
		return err
	}
	return app.RunInTransaction(func(tx core.App) error {
		for _, q := range []string{deleteAttemptsSQL, deleteEventsSQL} {
			if _, err := tx.NonconcurrentDB().NewQuery(q).Bind(dbx.Params{"id": r.Id}).Execute(); err != nil {
				return err
			}
		}
		if err := tx.Delete(r); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookDeleted, Webhook: id, By: by, Details: r.audited()})
	})
}

// Roll gives an endpoint a new secret; the previous one signs too, beside
// it, for grace (rollgrace's rule). The roll is audited as by's, with until when the previous
// secret signs, in the same transaction.
func Roll(app core.App, id string, grace time.Duration, by audit.Actor) (string, error) {
	if err := rollgrace.Check(grace); err != nil {
		return "", err
	}
	r, err := findEndpointRecord(app, id)
	if err != nil {
		return "", err
	}
	key, err := atrest.FromEnv(app)
	if err != nil {
		return "", err
	}
	secret, err := NewSecret()
	if err != nil {
		return "", err
	}
	if err := r.SetSecret(key, secret, grace); err != nil {
		return "", err
	}
	return secret, app.RunInTransaction(func(tx core.App) error {
		if err := tx.Save(r); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookSecretRolled, Webhook: id, By: by,
			Details: r.rollDetails()})
	})
}

// List is every endpoint, oldest first.
func List(app core.App) ([]Endpoint, error) {
	records, err := endpointRecords(app)
	if err != nil {
		return nil, err
	}
	list := make([]Endpoint, len(records))
	for i, r := range records {
		list[i] = view(r)
	}
	return list, countEvents(app, list, "")
}

// Get is one endpoint, its counts as in the list.
func Get(app core.App, id string) (Endpoint, error) {
	r, err := findEndpointRecord(app, id)
	if err != nil {
		return Endpoint{}, err
	}
	list := []Endpoint{view(r)}
	if err := countEvents(app, list, id); err != nil {
		return Endpoint{}, err
	}
	return list[0], nil
}

// countEvents sets the pending and failed counts of list's endpoints: those
// of the one endpoint id, or of all of them when id is empty.
func countEvents(app core.App, list []Endpoint, id string) error {
	var counts []struct {
		Endpoint string `db:"endpoint"`
		Status   string `db:"status"`
		N        int64  `db:"n"`
	}
	q := countEventsSQL
	if id != "" {
		q = countEndpointEventsSQL
	}
	if err := app.ConcurrentDB().NewQuery(q).Bind(dbx.Params{"endpoint": id}).All(&counts); err != nil {
		return err
	}
	for i := range list {
		for _, c := range counts {
			if c.Endpoint != list[i].ID {
				continue
			}
			if c.Status == "pending" {
				list[i].Pending = c.N
			} else {
				list[i].Failed = c.N
			}
		}
	}
	return nil
}

// rfc3339 is t in RFC 3339, or "" when zero.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func view(r *endpointRecord) Endpoint {
	e := Endpoint{
		ID: r.Id, URL: r.URL(), Events: r.Events(), Description: r.Description(),
		Paused: r.Paused(), PausedReason: r.PausedReason(),
		FailingSince: rfc3339(r.FailingSince()), Created: r.Created().UTC(),
	}
	if t := r.PreviousUntil(); t.After(time.Now()) {
		e.PreviousUntil = t.UTC().Format(time.RFC3339)
	}
	return e
}

// Attempt is one delivery attempt as staff see it, or the deliveries of a
// batch, in a row: Events counts them, and the rest is the last one's, but
// the latency, the slowest's.
type Attempt struct {
	ID          string    `json:"id"`
	Event       string    `json:"event"`
	WebhookID   string    `json:"webhookId"`
	Events      int       `json:"events"` // the events delivered in a row; 1: one attempt
	Type        string    `json:"type"`
	EventStatus string    `json:"eventStatus"` // pending, delivered or failed
	Status      int       `json:"status"`      // the HTTP status; 0: no answer
	Error       string    `json:"error"`
	LatencyMS   int64     `json:"latencyMs"`
	Response    string    `json:"response"` // the answer's first bytes
	Created     time.Time `json:"created"`
}

// Attempts are an endpoint's last attempts, newest first: each failed one,
// and the deliveries of each batch together.
func Attempts(app core.App, endpoint string, limit int) ([]Attempt, error) {
	if _, err := findEndpointRecord(app, endpoint); err != nil {
		return nil, err
	}
	var rows []struct {
		ID          string `db:"id"`
		Event       string `db:"event"`
		WebhookID   string `db:"webhook_id"`
		Events      int    `db:"events"`
		Type        string `db:"type"`
		EventStatus string `db:"event_status"`
		Status      int    `db:"status"`
		Error       string `db:"error"`
		LatencyMS   int64  `db:"latency_ms"`
		Response    string `db:"response"`
		Created     string `db:"created"`
	}
	err := app.ConcurrentDB().NewQuery(attemptsOfSQL).Bind(dbx.Params{"endpoint": endpoint, "limit": limit}).All(&rows)
	if err != nil {
		return nil, err
	}
	list := make([]Attempt, len(rows))
	for i, r := range rows {
		created, _ := time.Parse("2006-01-02 15:04:05.000Z", r.Created)
		list[i] = Attempt{ID: r.ID, Event: r.Event, WebhookID: r.WebhookID, Events: r.Events, Type: r.Type, EventStatus: r.EventStatus,
			Status: r.Status, Error: r.Error, LatencyMS: r.LatencyMS, Response: r.Response, Created: created}
	}
	return list, nil
}

// Resend makes a failed event of the endpoint pending again, due now, with
// its attempts counted from zero; it keeps its webhook-id. It is audited as
// by's in the same transaction.
func Resend(app core.App, endpoint, event string, by audit.Actor) error {
	return app.RunInTransaction(func(tx core.App) error {
		var ev struct {
			WebhookID string `db:"webhook_id"`
			Type      string `db:"type"`
		}
		err := tx.NonconcurrentDB().NewQuery(failedEventSQL).Bind(dbx.Params{"id": event, "endpoint": endpoint}).One(&ev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.NonconcurrentDB().NewQuery(resendSQL).Bind(dbx.Params{"id": event, "now": dateString(time.Now())}).Execute(); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookEventResent, Webhook: endpoint, By: by,
			Details: map[string]any{"event": event, "webhook_id": ev.WebhookID, "type": ev.Type}})
	})
}

// SendTest writes a test event for one endpoint, audited as by's in the
// same transaction.
func (o *Outbox) SendTest(app core.App, endpoint string, by audit.Actor) error {
	if _, err := findEndpointRecord(app, endpoint); err != nil {
		return err
	}
	return app.RunInTransaction(func(tx core.App) error {
		if err := o.WriteTo(tx, endpoint, Event{Type: TestEvent, Data: map[string]any{"endpoint": endpoint}}); err != nil {
			return err
		}
		return audit.Write(tx, audit.Entry{Action: audit.WebhookTestSent, Webhook: endpoint, By: by})
	})
}
