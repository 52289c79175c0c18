package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
)

// The delivery's rules.
const (
	// Timeout bounds one attempt, connection to answer: a 2xx within it is
	// delivered.
	Timeout = 15 * time.Second
	// lease is how long an instance holds an event it sends: an attempt's
	// timeout and a margin. After a crash, the event is sent again once it
	// ends.
	lease = Timeout + 15*time.Second
	// PauseAfter is how long an endpoint fails, every attempt in a row,
	// before it is paused.
	PauseAfter = 5 * 24 * time.Hour
	// answerBytes is how much of an answer the history keeps; answerLimit
	// how much of it is read at all.
	answerBytes = 1024
	answerLimit = 64 << 10
	// tick is how often the deliverer looks for due events when no commit
	// woke it: retries come due, other instances write events.
	tick = time.Second
	// DefaultRetention is how long the attempts, and the events delivered
	// or failed, are kept.
	DefaultRetention = 30 * 24 * time.Hour
)

// retryAfter is the wait after each failed attempt: the first retry within
// seconds, then Standard Webhooks' schedule. After the last, the event has
// failed.
var retryAfter = []time.Duration{
	2 * time.Second, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// MaxAttempts is the attempts an event gets.
var MaxAttempts = len(retryAfter) + 1

// jitter is d give or take a fifth, so that the retries of many events
// failing together spread out.
func jitter(d time.Duration) time.Duration {
	return d - d/5 + rand.N(2*d/5+1)
}

// Observer counts deliveries (internal/metrics); nil counts nothing.
type Observer interface {
	// ObserveWebhookAttempt counts an attempt's outcome (delivered,
	// retried, failed) and its duration.
	ObserveWebhookAttempt(outcome string, took time.Duration)
}

// Config configures a Deliverer.
type Config struct {
	Targets  Targets
	Log      *slog.Logger
	Observer Observer
}

// Deliverer sends the outbox's events.
type Deliverer struct {
	app    core.App
	outbox *Outbox
	cfg    Config
	client *http.Client
	owner  string // this instance's name in leases

	mu      sync.Mutex
	sending map[string]bool // endpoints with a sender running here

	stop   chan struct{}
	ctx    context.Context // ends at Stop: attempts under way end too
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartDeliverer starts sending outbox's events. Stop stops it.
func StartDeliverer(app core.App, outbox *Outbox, cfg Config) *Deliverer {
	d := &Deliverer{
		app: app, outbox: outbox, cfg: cfg, client: NewClient(cfg.Targets),
		owner: security.RandomString(16), sending: map[string]bool{}, stop: make(chan struct{}),
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(1)
	go d.run()
	return d
}

// NewClient is the HTTP client of deliveries: no proxy, no redirect
// followed, every address checked before connecting, every phase bounded.
func NewClient(t Targets) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: Timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           t.DialContext(dialer),
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: Timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       time.Minute,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Stop stops looking for events and ends the attempts under way, which
// are retried later (by another instance, or after a restart).
func (d *Deliverer) Stop() {
	close(d.stop)
	d.cancel()
	d.wg.Wait()
}

func (d *Deliverer) run() {
	defer d.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		case <-d.outbox.wake:
		}
		if err := d.outbox.Refresh(); err != nil {
			d.cfg.Log.Error("Webhooks: could not read the endpoints", "error", err)
			continue
		}
		d.dispatch()
	}
}

// event is an outbox record as a delivery needs it.
type event struct {
	ID        string `db:"id"`
	WebhookID string `db:"webhook_id"`
	Endpoint  string `db:"endpoint"`
	Type      string `db:"type"`
	Body      string `db:"body"`
	Attempts  int    `db:"attempts"`
}

// headsSQL are the events due for sending: each endpoint's oldest pending
// event, when it is due and no instance holds it.
const headsSQL = "SELECT id, webhook_id, endpoint, type, body, attempts FROM " + EventsCollection +
	" WHERE rowid IN (SELECT MIN(rowid) FROM " + EventsCollection + " WHERE status = 'pending' GROUP BY endpoint)" +
	" AND next_attempt <= {:now} AND lease_until < {:now}"

// dispatch starts a sender for each endpoint, not paused, whose oldest
// pending event is due, unless one runs here already.
func (d *Deliverer) dispatch() {
	s := d.outbox.subs.Load()
	if s == nil || len(s.byType) == 0 {
		return // no endpoint: no event
	}
	active := s.endpointIDs()
	var heads []event
	now := dateString(time.Now())
	if err := d.app.ConcurrentDB().NewQuery(headsSQL).Bind(dbx.Params{"now": now}).All(&heads); err != nil {
		d.cfg.Log.Error("Webhooks: could not read the outbox", "error", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ev := range heads {
		if d.sending[ev.Endpoint] || !slices.Contains(active, ev.Endpoint) {
			continue
		}
		d.sending[ev.Endpoint] = true
		d.wg.Add(1)
		go d.send(ev)
	}
}

// send sends ev, then the endpoint's next events while they are due.
func (d *Deliverer) send(ev event) {
	defer d.wg.Done()
	defer func() {
		d.mu.Lock()
		delete(d.sending, ev.Endpoint)
		d.mu.Unlock()
	}()
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		claimed, err := d.claim(ev.ID)
		if err != nil {
			d.cfg.Log.Error("Webhooks: could not lease an event", "event", ev.ID, "error", err)
			return
		}
		if !claimed {
			return
		}
		delivered := d.attempt(ev)
		if !delivered {
			return // its retry, and the events after it, wait
		}
		next, ok, err := d.nextDue(ev.Endpoint)
		if err != nil || !ok {
			return
		}
		ev = next
	}
}

// claim leases the event to this instance, unless another holds it.
func (d *Deliverer) claim(id string) (bool, error) {
	now := time.Now()
	res, err := d.app.NonconcurrentDB().NewQuery("UPDATE " + EventsCollection +
		" SET lease_owner = {:owner}, lease_until = {:until} WHERE id = {:id} AND status = 'pending' AND lease_until < {:now}").
		Bind(dbx.Params{"owner": d.owner, "until": dateString(now.Add(lease)), "id": id, "now": dateString(now)}).Execute()
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// nextDue is the endpoint's oldest pending event, if it is due.
func (d *Deliverer) nextDue(endpoint string) (event, bool, error) {
	var evs []event
	now := dateString(time.Now())
	err := d.app.ConcurrentDB().NewQuery("SELECT id, webhook_id, endpoint, type, body, attempts FROM " + EventsCollection +
		" WHERE endpoint = {:endpoint} AND status = 'pending' ORDER BY rowid LIMIT 1").
		Bind(dbx.Params{"endpoint": endpoint}).All(&evs)
	if err != nil || len(evs) == 0 {
		return event{}, false, err
	}
	var due int
	err = d.app.ConcurrentDB().NewQuery("SELECT COUNT(*) FROM " + EventsCollection +
		" WHERE id = {:id} AND next_attempt <= {:now} AND lease_until < {:now}").
		Bind(dbx.Params{"id": evs[0].ID, "now": now}).Row(&due)
	return evs[0], due == 1, err
}

// result is what one attempt got.
type result struct {
	status  int
	answer  string
	err     error
	latency time.Duration
}

// attempt sends ev once and records the attempt; it reports whether ev was
// delivered.
func (d *Deliverer) attempt(ev event) bool {
	endpoint, err := d.app.FindRecordById(EndpointsCollection, ev.Endpoint)
	if err != nil {
		d.cfg.Log.Error("Webhooks: could not read an event's endpoint", "endpoint", ev.Endpoint, "error", err)
		return false
	}
	secrets := []string{endpoint.GetString("secret")}
	if prev := endpoint.GetString("previous_secret"); prev != "" && endpoint.GetDateTime("previous_until").Time().After(time.Now()) {
		secrets = append(secrets, prev)
	}
	r := d.post(endpoint.GetString("url"), ev, secrets)
	delivered := r.err == nil && r.status >= 200 && r.status < 300
	outcome, err := d.record(ev, endpoint, r, delivered)
	if err != nil {
		d.cfg.Log.Error("Webhooks: could not record an attempt", "event", ev.ID, "error", err)
	}
	if d.cfg.Observer != nil {
		d.cfg.Observer.ObserveWebhookAttempt(outcome, r.latency)
	}
	if !delivered {
		reason := ""
		if r.err != nil {
			reason = r.err.Error()
		}
		d.cfg.Log.Warn("Webhooks: a delivery failed", "endpoint", ev.Endpoint, "webhookId", ev.WebhookID,
			"type", ev.Type, "attempt", ev.Attempts+1, "status", r.status, "error", reason, "outcome", outcome)
	}
	return delivered
}

// post makes one attempt.
func (d *Deliverer) post(url string, ev event, secrets []string) (r result) {
	began := time.Now()
	defer func() { r.latency = time.Since(began) }()
	ts := began.Unix()
	sig, err := Sign(ev.WebhookID, ts, []byte(ev.Body), secrets...)
	if err != nil {
		return result{err: err}
	}
	ctx, cancel := context.WithTimeout(d.ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(ev.Body)))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "petstore-webhooks")
	req.Header.Set("webhook-id", ev.WebhookID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return result{err: errors.Unwrap(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
	if len(body) > answerBytes {
		body = body[:answerBytes]
	}
	r = result{status: resp.StatusCode, answer: string(bytes.ToValidUTF8(body, nil))}
	if err != nil && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		r.err = err
	}
	return r
}

// record saves the attempt, and what it makes of the event and its
// endpoint, in one transaction; it returns the attempt's outcome.
func (d *Deliverer) record(ev event, endpoint *core.Record, r result, delivered bool) (string, error) {
	now := time.Now()
	attempts := ev.Attempts + 1
	outcome := "delivered"
	status, next := "delivered", ""
	if !delivered {
		if attempts >= MaxAttempts {
			outcome, status = "failed", "failed"
		} else {
			outcome, status = "retried", "pending"
			next = dateString(now.Add(jitter(retryAfter[attempts-1])))
		}
	}
	errText := ""
	if r.err != nil {
		errText = r.err.Error()
		if len(errText) > 500 {
			errText = errText[:500]
		}
	}
	err := d.app.RunInTransaction(func(tx core.App) error {
		db := tx.NonconcurrentDB()
		if _, err := db.NewQuery("INSERT INTO " + AttemptsCollection +
			" (id, event, endpoint, webhook_id, status, error, latency_ms, response, created)" +
			" VALUES ({:id}, {:event}, {:endpoint}, {:webhookId}, {:status}, {:error}, {:latency}, {:response}, {:now})").
			Bind(dbx.Params{
				"id": core.GenerateDefaultRandomId(), "event": ev.ID, "endpoint": ev.Endpoint, "webhookId": ev.WebhookID,
				"status": r.status, "error": errText, "latency": r.latency.Milliseconds(), "response": r.answer,
				"now": dateString(now),
			}).Execute(); err != nil {
			return err
		}
		set := "status = {:status}, attempts = {:attempts}, lease_owner = '', lease_until = '', updated = {:now}"
		if next != "" {
			set += ", next_attempt = {:next}"
		}
		if _, err := db.NewQuery("UPDATE " + EventsCollection + " SET " + set + " WHERE id = {:id}").Bind(dbx.Params{
			"status": status, "attempts": attempts, "now": dateString(now), "next": next, "id": ev.ID,
		}).Execute(); err != nil {
			return err
		}
		return d.endpointAfter(db, endpoint, delivered, now)
	})
	return outcome, err
}

// endpointAfter keeps the endpoint's failing_since, and pauses it once it
// has failed for PauseAfter in a row.
func (d *Deliverer) endpointAfter(db dbx.Builder, endpoint *core.Record, delivered bool, now time.Time) error {
	since := endpoint.GetDateTime("failing_since").Time()
	switch {
	case delivered && since.IsZero():
		return nil
	case delivered:
		_, err := db.NewQuery("UPDATE " + EndpointsCollection + " SET failing_since = '' WHERE id = {:id}").
			Bind(dbx.Params{"id": endpoint.Id}).Execute()
		return err
	case since.IsZero():
		_, err := db.NewQuery("UPDATE " + EndpointsCollection + " SET failing_since = {:now} WHERE id = {:id} AND failing_since = ''").
			Bind(dbx.Params{"id": endpoint.Id, "now": dateString(now)}).Execute()
		return err
	case now.Sub(since) >= PauseAfter:
		reason := fmt.Sprintf("Paused at %s: every delivery failed since %s.", now.UTC().Format(time.RFC3339), since.UTC().Format(time.RFC3339))
		d.cfg.Log.Warn("Webhooks: an endpoint is paused", "endpoint", endpoint.Id, "reason", reason)
		_, err := db.NewQuery("UPDATE " + EndpointsCollection + " SET paused = TRUE, paused_reason = {:reason} WHERE id = {:id}").
			Bind(dbx.Params{"id": endpoint.Id, "reason": reason}).Execute()
		return err
	}
	return nil
}

// Prune deletes the attempts, and the events delivered or failed, older
// than retention.
func Prune(app core.App, retention time.Duration) error {
	cutoff := dateString(time.Now().Add(-retention))
	db := app.NonconcurrentDB()
	if _, err := db.NewQuery("DELETE FROM " + AttemptsCollection + " WHERE created < {:cutoff}").
		Bind(dbx.Params{"cutoff": cutoff}).Execute(); err != nil {
		return err
	}
	_, err := db.NewQuery("DELETE FROM " + EventsCollection + " WHERE status != 'pending' AND updated < {:cutoff}" +
		" AND id NOT IN (SELECT event FROM " + AttemptsCollection + ")").Bind(dbx.Params{"cutoff": cutoff}).Execute()
	return err
}
