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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"

	"petstore/internal/audit"
)

// The delivery's rules.
const (
	// Timeout bounds one attempt, connection to answer: a 2xx within it is
	// delivered.
	Timeout = 15 * time.Second
	// lease is how long an instance holds the events it sends: an
	// attempt's timeout and a margin, extended while a batch takes longer.
	// After a crash, the events are sent again once it ends.
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
	ID          string `db:"id"`
	WebhookID   string `db:"webhook_id"`
	Endpoint    string `db:"endpoint"`
	Type        string `db:"type"`
	Body        string `db:"body"`
	Attempts    int    `db:"attempts"`
	NextAttempt string `db:"next_attempt"`
	LeaseUntil  string `db:"lease_until"`
}

// due reports whether ev may be sent at now (a stored date): its time has
// come and no instance holds it.
func (ev event) due(now string) bool { return ev.NextAttempt <= now && ev.LeaseUntil < now }

// batchMax bounds the events one lease takes. An endpoint that keeps up
// gets its events one after the other, each its own POST, while their
// lease and their attempts are written once per batch.
const batchMax = 32

// headsSQL are an endpoint's oldest pending events, in order: what it gets
// next. The index on (endpoint, status) holds the rowid in order, so this
// reads no more entries than it returns, however long the outbox.
const headsSQL = "SELECT id, webhook_id, endpoint, type, body, attempts, next_attempt, lease_until FROM " + EventsCollection +
	" WHERE endpoint = {:endpoint} AND status = 'pending' ORDER BY rowid LIMIT {:limit}"

func (d *Deliverer) heads(endpoint string, limit int) ([]event, error) {
	var evs []event
	err := d.app.ConcurrentDB().NewQuery(headsSQL).Bind(dbx.Params{"endpoint": endpoint, "limit": limit}).All(&evs)
	return evs, err
}

// dispatch starts a sender for each endpoint, not paused, whose oldest
// pending event is due, unless one runs here already.
func (d *Deliverer) dispatch() {
	s := d.outbox.subs.Load()
	if s == nil {
		return
	}
	now := dateString(time.Now())
	for _, endpoint := range s.endpointIDs() {
		d.mu.Lock()
		busy := d.sending[endpoint]
		d.mu.Unlock()
		if busy {
			continue // its sender goes on to the next events itself
		}
		evs, err := d.heads(endpoint, 1)
		if err != nil {
			d.cfg.Log.Error("Webhooks: could not read the outbox", "error", err)
			return
		}
		if len(evs) == 0 || !evs[0].due(now) {
			continue
		}
		d.mu.Lock()
		if !d.sending[endpoint] {
			d.sending[endpoint] = true
			d.wg.Add(1)
			go d.send(endpoint)
		}
		d.mu.Unlock()
	}
}

// send sends the endpoint's due events, in order, batch after batch, until
// none is due or one fails.
func (d *Deliverer) send(endpointID string) {
	defer d.wg.Done()
	defer func() {
		d.mu.Lock()
		delete(d.sending, endpointID)
		d.mu.Unlock()
	}()
	var endpoint *core.Record
	var read time.Time
	size := batchMax
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		batch, until, err := d.claim(endpointID, size)
		if err != nil {
			d.cfg.Log.Error("Webhooks: could not lease events", "endpoint", endpointID, "error", err)
			return
		}
		if len(batch) == 0 {
			return
		}
		// The endpoint (its URL and secrets), read again every second: a
		// change or a roll applies to the next attempts.
		if endpoint == nil || time.Since(read) > time.Second {
			if endpoint, err = d.app.FindRecordById(EndpointsCollection, endpointID); err != nil {
				d.cfg.Log.Error("Webhooks: could not read an event's endpoint", "endpoint", endpointID, "error", err)
				d.release(batch)
				return
			}
			read = time.Now()
		}
		results, slowest := d.post(endpoint, batch, until)
		if n := len(results); n > 0 && d.ctx.Err() != nil && !results[n-1].delivered() {
			// Ended by Stop, not by the endpoint: no attempt; the event
			// is given back with the rest.
			results = results[:n-1]
		}
		if err := d.record(batch, results, endpoint); err != nil {
			d.cfg.Log.Error("Webhooks: could not record attempts", "endpoint", endpointID, "error", err)
			return
		}
		if len(results) < len(batch) || !results[len(results)-1].delivered() || d.ctx.Err() != nil {
			return // its retry, and the events after it, wait
		}
		size = batchMax
		if slowest > time.Second { // a slow endpoint's lease holds one event
			size = 1
		}
	}
}

var errLeaseLost = errors.New("webhooks: another instance leased some of the events")

// claim leases to this instance the endpoint's oldest pending events that
// are due, at most size, in one transaction: all of them, or none when
// another instance holds or sent any meanwhile.
func (d *Deliverer) claim(endpoint string, size int) ([]event, time.Time, error) {
	evs, err := d.heads(endpoint, size)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := time.Now()
	stamp := dateString(now)
	n := 0
	for n < len(evs) && evs[n].due(stamp) {
		n++
	}
	if n == 0 {
		return nil, time.Time{}, nil
	}
	evs = evs[:n]
	until := now.Add(lease)
	err = d.app.RunInTransaction(func(tx core.App) error {
		res, err := tx.NonconcurrentDB().Update(EventsCollection,
			dbx.Params{"lease_owner": d.owner, "lease_until": dateString(until)},
			dbx.And(dbx.In("id", ids(evs)...), dbx.NewExp("status = 'pending' AND lease_until < {:now}", dbx.Params{"now": stamp})),
		).Execute()
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || int(got) != len(evs) {
			return errLeaseLost
		}
		return nil
	})
	if errors.Is(err, errLeaseLost) {
		return nil, time.Time{}, nil
	}
	return evs, until, err
}

func ids(evs []event) []any {
	list := make([]any, len(evs))
	for i, ev := range evs {
		list[i] = ev.ID
	}
	return list
}

// release gives events back unsent.
func (d *Deliverer) release(evs []event) {
	_, err := d.app.NonconcurrentDB().Update(EventsCollection, dbx.Params{"lease_owner": "", "lease_until": ""},
		dbx.And(dbx.In("id", ids(evs)...), dbx.HashExp{"lease_owner": d.owner})).Execute()
	if err != nil {
		d.cfg.Log.Error("Webhooks: could not release events", "error", err)
	}
}

// result is what one attempt got.
type result struct {
	status  int
	answer  string
	err     error
	latency time.Duration
}

func (r result) delivered() bool { return r.err == nil && r.status >= 200 && r.status < 300 }

// post sends batch's events in order, until one fails or the deliverer
// stops; it extends their lease while it would end before an attempt's
// timeout. It returns the attempts' results and the slowest's latency.
func (d *Deliverer) post(endpoint *core.Record, batch []event, until time.Time) ([]result, time.Duration) {
	secrets := []string{endpoint.GetString("secret")}
	if prev := endpoint.GetString("previous_secret"); prev != "" && endpoint.GetDateTime("previous_until").Time().After(time.Now()) {
		secrets = append(secrets, prev)
	}
	url := endpoint.GetString("url")
	var results []result
	var slowest time.Duration
	for i, ev := range batch {
		if d.ctx.Err() != nil {
			break
		}
		if time.Until(until) < Timeout+5*time.Second {
			next := time.Now().Add(lease)
			_, err := d.app.NonconcurrentDB().Update(EventsCollection, dbx.Params{"lease_until": dateString(next)},
				dbx.And(dbx.In("id", ids(batch[i:])...), dbx.HashExp{"lease_owner": d.owner})).Execute()
			if err != nil {
				d.cfg.Log.Error("Webhooks: could not extend a lease", "error", err)
				break
			}
			until = next
		}
		r := d.postOne(url, ev, secrets)
		results = append(results, r)
		slowest = max(slowest, r.latency)
		if !r.delivered() {
			break
		}
	}
	return results, slowest
}

// postOne makes one attempt.
func (d *Deliverer) postOne(url string, ev event, secrets []string) (r result) {
	began := time.Now()
	defer func() { r.latency = time.Since(began) }()
	ts := began.Unix()
	sig, err := Sign(ev.WebhookID, ts, []byte(ev.Body), secrets...)
	if err != nil {
		return result{err: err}
	}
	ctx, cancel := context.WithTimeout(d.ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(ev.Body))
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

// record saves, in one transaction, each attempt and what it makes of its
// event, gives back the events not attempted, and keeps the endpoint's
// failing streak; then it counts and logs the attempts.
func (d *Deliverer) record(batch []event, results []result, endpoint *core.Record) error {
	now := time.Now()
	stamp := dateString(now)
	outcomes := make([]string, len(results))
	err := d.app.RunInTransaction(func(tx core.App) error {
		db := tx.NonconcurrentDB()
		for i, r := range results {
			ev := batch[i]
			attempts := ev.Attempts + 1
			outcome, status, next := "delivered", "delivered", ev.NextAttempt
			if !r.delivered() {
				if attempts >= MaxAttempts {
					outcome, status = "failed", "failed"
				} else {
					outcome, status = "retried", "pending"
					next = dateString(now.Add(jitter(retryAfter[attempts-1])))
				}
			}
			outcomes[i] = outcome
			errText := ""
			if r.err != nil {
				errText = truncate(r.err.Error(), 500)
			}
			if _, err := db.NewQuery("INSERT INTO " + AttemptsCollection +
				" (id, event, endpoint, webhook_id, status, error, latency_ms, response, created)" +
				" VALUES ({:id}, {:event}, {:endpoint}, {:webhookId}, {:status}, {:error}, {:latency}, {:response}, {:now})").
				Bind(dbx.Params{
					"id": core.GenerateDefaultRandomId(), "event": ev.ID, "endpoint": ev.Endpoint, "webhookId": ev.WebhookID,
					"status": r.status, "error": errText, "latency": r.latency.Milliseconds(), "response": r.answer, "now": stamp,
				}).Execute(); err != nil {
				return err
			}
			if _, err := db.Update(EventsCollection, dbx.Params{
				"status": status, "attempts": attempts, "next_attempt": next, "lease_owner": "", "lease_until": "", "updated": stamp,
			}, dbx.HashExp{"id": ev.ID}).Execute(); err != nil {
				return err
			}
		}
		if rest := batch[len(results):]; len(rest) > 0 {
			if _, err := db.Update(EventsCollection, dbx.Params{"lease_owner": "", "lease_until": ""},
				dbx.In("id", ids(rest)...)).Execute(); err != nil {
				return err
			}
		}
		if len(results) == 0 {
			return nil
		}
		return d.endpointAfter(tx, endpoint, results[len(results)-1].delivered(), now)
	})
	if err != nil {
		return err
	}
	for i, r := range results {
		if d.cfg.Observer != nil {
			d.cfg.Observer.ObserveWebhookAttempt(outcomes[i], r.latency)
		}
		if !r.delivered() {
			reason := ""
			if r.err != nil {
				reason = r.err.Error()
			}
			ev := batch[i]
			d.cfg.Log.Warn("Webhooks: a delivery failed", "endpoint", ev.Endpoint, "webhookId", ev.WebhookID,
				"type", ev.Type, "attempt", ev.Attempts+1, "status", r.status, "error", reason, "outcome", outcomes[i])
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// endpointAfter keeps the endpoint's failing_since, and pauses it once it
// has failed for PauseAfter in a row, audited as the system's in tx.
func (d *Deliverer) endpointAfter(tx core.App, endpoint *core.Record, delivered bool, now time.Time) error {
	db := tx.NonconcurrentDB()
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
		res, err := db.NewQuery("UPDATE " + EndpointsCollection + " SET paused = TRUE, paused_reason = {:reason} WHERE id = {:id} AND paused = FALSE").
			Bind(dbx.Params{"id": endpoint.Id, "reason": reason}).Execute()
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil // paused meanwhile, or deleted
		}
		d.cfg.Log.Warn("Webhooks: an endpoint is paused", "endpoint", endpoint.Id, "reason", reason)
		return audit.Write(tx, audit.Entry{Action: audit.WebhookPaused, Webhook: endpoint.Id, By: audit.System,
			Details: map[string]any{"reason": reason, "failing_since": since.UTC().Format(time.RFC3339)}})
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
