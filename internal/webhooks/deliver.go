package webhooks

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"petstore/internal/atrest"
	"petstore/internal/audit"
	"petstore/internal/database"
	"petstore/internal/tracing"
	"petstore/internal/writegate"
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
	// pauseAfter is how long an endpoint fails, every attempt in a row,
	// before it is paused.
	pauseAfter = 5 * 24 * time.Hour
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

// The outcomes of an attempt: delivered; failed and tried again later;
// failed for the last time.
const (
	outcomeDelivered = "delivered"
	outcomeRetried   = "retried"
	outcomeFailed    = "failed"
)

// Outcomes are every outcome an Observer gets, so that it can show each at 0
// from the start.
var Outcomes = []string{outcomeDelivered, outcomeRetried, outcomeFailed}

// Config configures a Deliverer.
type Config struct {
	Targets  Targets
	Log      *slog.Logger
	Observer Observer
	// Gate says whether this node may write now (internal/writegate):
	// while it is closed, no event is leased, sent or recorded, since an
	// event sent and not recorded is sent again by whichever node
	// delivers next.
	Gate writegate.Gate
}

// Deliverer sends the outbox's events.
type Deliverer struct {
	app    core.App
	outbox *Outbox
	cfg    Config
	owner  string      // this instance's name in leases
	key    *atrest.Key // opens the endpoints' secrets; nil: stored in plaintext
	stmts  statements

	mu      sync.Mutex
	sending map[string]bool    // endpoints with a sender running here
	clients map[string]*Client // by endpoint: its connection, kept between batches

	stop   chan struct{}
	ctx    context.Context // ends at Stop: attempts under way end too
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartDeliverer starts sending outbox's events. Stop stops it.
func StartDeliverer(app core.App, outbox *Outbox, cfg Config) (*Deliverer, error) {
	d := &Deliverer{
		app: app, outbox: outbox, cfg: cfg, owner: security.RandomString(16),
		sending: map[string]bool{}, clients: map[string]*Client{}, stop: make(chan struct{}),
	}
	if !cfg.Targets.AllowPrivate {
		// This host's addresses are read at start, once, for every check.
		if _, err := hostAddresses(); err != nil {
			return nil, err
		}
	}
	key, err := atrest.FromEnv(app)
	if err != nil {
		return nil, err
	}
	d.key = key
	if err := d.stmts.prepare(app); err != nil {
		return nil, err
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wg.Add(1)
	go d.run()
	return d, nil
}

// Stop stops looking for events and ends the attempts under way, which
// are retried later (by another instance, or after a restart).
func (d *Deliverer) Stop() {
	close(d.stop)
	d.cancel()
	d.wg.Wait()
	d.stmts.close()
	for _, c := range d.clients {
		c.Close()
	}
}

// client is the endpoint's client, made at its first delivery.
func (d *Deliverer) client(endpoint string) *Client {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.clients[endpoint]
	if c == nil {
		c = NewClient(d.cfg.Targets)
		d.clients[endpoint] = c
	}
	return c
}

// closeIdle closes the clients of endpoints that no sender uses and whose
// connection has been idle for idleTimeout.
func (d *Deliverer) closeIdle() {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for endpoint, c := range d.clients {
		if !d.sending[endpoint] && c.idle(now) {
			c.Close()
			delete(d.clients, endpoint)
		}
	}
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
			d.closeIdle()
		case <-d.outbox.wake:
		}
		if !d.cfg.Gate.Open() {
			continue
		}
		if err := d.outbox.refresh(); err != nil {
			d.cfg.Log.Error("Webhooks: could not read the endpoints", "error", err)
			continue
		}
		d.dispatch()
	}
}

// event is an outbox record as a delivery needs it.
type event struct {
	ID          string
	WebhookID   string
	Endpoint    string
	Type        string
	Body        string
	Attempts    int
	NextAttempt string
	LeaseUntil  string
	// Traceparent names the span of the request that made the event, which
	// its deliveries link to; "" when tracing was off.
	Traceparent string
}

// due reports whether ev may be sent at now (a stored date): its time has
// come and no instance holds it.
func (ev event) due(now string) bool { return ev.NextAttempt <= now && ev.LeaseUntil < now }

// batchMax bounds the events one lease takes. An endpoint that keeps up
// gets its events one after the other, each its own POST, while their
// lease and their attempts are written once per batch, in one transaction
// that records a batch and leases the next.
const batchMax = 32

// statements are the deliverer's prepared statements (record.go).
type statements struct {
	look, heads, lease, extend, delivered, failed, release, attempts *sql.Stmt
}

func (st *statements) prepare(app core.App) error {
	db, err := database.WriteDB(app)
	if err != nil {
		return err
	}
	reads, ok := app.ConcurrentDB().(*dbx.DB)
	if !ok {
		return fmt.Errorf("the app's read pool is a %T, not a *dbx.DB", app.ConcurrentDB())
	}
	for _, s := range []struct {
		stmt **sql.Stmt
		db   *sql.DB
		sql  string
	}{
		{&st.look, reads.DB(), headsSQL},
		{&st.heads, db, headsSQL},
		{&st.lease, db, leaseSQL},
		{&st.extend, db, extendSQL},
		{&st.delivered, db, deliveredSQL},
		{&st.failed, db, failedSQL},
		{&st.release, db, releaseSQL},
		{&st.attempts, db, attemptsSQL},
	} {
		stmt, err := s.db.Prepare(s.sql)
		if err != nil {
			st.close()
			return fmt.Errorf("webhooks: prepare the deliverer's statements: %w", err)
		}
		*s.stmt = stmt
	}
	return nil
}

func (st *statements) close() {
	for _, stmt := range []*sql.Stmt{st.look, st.heads, st.lease, st.extend, st.delivered, st.failed, st.release, st.attempts} {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
}

// heads runs headsSQL with stmt.
func heads(stmt *sql.Stmt, endpoint string, limit int) ([]event, error) {
	rows, err := stmt.Query(sql.Named("endpoint", endpoint), sql.Named("limit", limit))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var evs []event
	for rows.Next() {
		var ev event
		if err := rows.Scan(&ev.ID, &ev.WebhookID, &ev.Endpoint, &ev.Type, &ev.Body, &ev.Attempts, &ev.NextAttempt, &ev.LeaseUntil, &ev.Traceparent); err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, rows.Err()
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
		evs, err := heads(d.stmts.look, endpoint, 1)
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

// target is an endpoint as its attempts need it.
type target struct {
	record *endpointRecord
	url    *url.URL
	keys   [][]byte // the secrets' HMAC keys: two during a roll's grace
	read   time.Time
}

// readTarget reads the endpoint (its URL and secrets).
func (d *Deliverer) readTarget(endpointID string) (*target, error) {
	r, err := findEndpointRecord(d.app, endpointID)
	if err != nil {
		return nil, err
	}
	secrets, err := r.Secrets(d.key)
	if err != nil {
		return nil, err
	}
	keys, err := secretKeys(secrets...)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(r.URL())
	if err != nil {
		return nil, err
	}
	return &target{record: r, url: u, keys: keys, read: time.Now()}, nil
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
	var batch []event
	var results []result
	var until time.Time
	var to *target
	client := d.client(endpointID)
	size := batchMax
	for {
		// The endpoint, read again every second: a change or a roll applies
		// to the next attempts.
		if to == nil || time.Since(to.read) > time.Second {
			t, err := d.readTarget(endpointID)
			if err != nil {
				d.cfg.Log.Error("Webhooks: could not read an event's endpoint", "endpoint", endpointID, "error", err)
				if len(batch) > 0 {
					d.release(batch)
				}
				return
			}
			to = t
		}
		next := size
		select {
		case <-d.stop:
			next = 0
		default:
		}
		if n := len(results); n > 0 && (n < len(batch) || !results[n-1].delivered()) {
			next = 0 // its retry, and the events after it, wait
		}
		var err error
		batch, until, err = d.step(to, batch, results, next)
		if errors.Is(err, writegate.ErrClosed) {
			d.cfg.Log.Warn("Webhooks: an endpoint's deliveries stop: this node may not write", "endpoint", endpointID)
			return
		}
		if err != nil {
			d.cfg.Log.Error("Webhooks: could not record attempts or lease events", "endpoint", endpointID, "error", err)
			return
		}
		if len(batch) == 0 {
			return
		}
		var slowest time.Duration
		results, slowest = d.post(client, to, batch, until)
		if n := len(results); n > 0 && d.ctx.Err() != nil && !results[n-1].delivered() {
			// Ended by Stop, not by the endpoint: no attempt; the event
			// is given back with the rest.
			results = results[:n-1]
		}
		size = batchMax
		if slowest > time.Second { // a slow endpoint's lease holds one event
			size = 1
		}
	}
}

var errLeaseLost = errors.New("webhooks: another instance leased the events")

// step runs one transaction. It records the attempts of done, in order (a
// result for each of its first events; the events after them go back
// unsent), and keeps the endpoint's failing streak; then, unless next is
// 0, it leases to this instance the endpoint's oldest pending events that
// are due, at most next (the first one's lease holds them all), and
// returns them with the lease's end. The write
// transaction begins IMMEDIATE: what it reads, no instance changes before
// it commits; it commits only while the gate is open (writegate.ErrClosed).
// After the commit, it counts and logs the attempts.
func (d *Deliverer) step(to *target, done []event, results []result, next int) ([]event, time.Time, error) {
	now := time.Now()
	stamp := dateString(now)
	outcomes := make([]string, len(results))
	var leased []event
	until := now.Add(lease)
	err := d.cfg.Gate.Write(d.app, func(tx core.App) error {
		leased = nil
		sqlTx, err := database.SQLTx(tx)
		if err != nil {
			return err
		}
		stmt := func(s *sql.Stmt) *sql.Stmt { return sqlTx.Stmt(s) }
		if len(done) > 0 {
			if err := d.record(tx, stmt, done, results, outcomes, to, now); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		evs, err := heads(stmt(d.stmts.heads), to.record.Id, next)
		if err != nil {
			return err
		}
		n := 0
		for n < len(evs) && evs[n].due(stamp) {
			n++
		}
		if n == 0 {
			return nil
		}
		evs = evs[:n]
		res, err := stmt(d.stmts.lease).Exec(sql.Named("owner", d.owner), sql.Named("until", dateString(until)),
			sql.Named("id", evs[0].ID), sql.Named("now", stamp))
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || got != 1 {
			return errLeaseLost
		}
		leased = evs
		return nil
	})
	if errors.Is(err, errLeaseLost) && len(done) == 0 {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	if n := len(results); n > 0 && !results[n-1].delivered() {
		// The endpoint may be paused now: new events leave it out from here.
		if err := d.outbox.refresh(); err != nil {
			d.cfg.Log.Error("Webhooks: could not read the endpoints", "error", err)
		}
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
			ev := done[i]
			d.cfg.Log.Warn("Webhooks: a delivery failed", "endpoint", ev.Endpoint, "webhookId", ev.WebhookID,
				"type", ev.Type, "attempt", ev.Attempts+1, "status", r.status, "error", reason, "outcome", outcomes[i])
		}
	}
	return leased, until, nil
}

// record writes, in tx, what results make of batch's events, gives back
// the events not attempted, and keeps the endpoint's failing streak;
// outcomes gets each attempt's outcome. The history gets a record for the
// deliveries, one for all of them (the last one's event, status and answer,
// the slowest's latency, and how many they are), and one for the failed
// attempt, if any: the attempts (at most one fails, the batch's last) are
// one INSERT, the delivered events one UPDATE.
func (d *Deliverer) record(tx core.App, stmt func(*sql.Stmt) *sql.Stmt, batch []event, results []result, outcomes []string, to *target, now time.Time) error {
	stamp := dateString(now)
	var rows [][]any
	var delivered []event
	var slowest time.Duration
	for i, r := range results {
		ev := batch[i]
		if r.delivered() {
			outcomes[i] = outcomeDelivered
			delivered = append(delivered, ev)
			slowest = max(slowest, r.latency)
			if i+1 == len(results) || !results[i+1].delivered() {
				rows = append(rows, []any{batchID(now, len(rows)), ev.ID, ev.WebhookID, len(delivered), r.status, "", slowest.Milliseconds(), r.answer})
			}
			continue
		}
		errText := ""
		if r.err != nil {
			errText = truncate(r.err.Error(), 500)
		}
		rows = append(rows, []any{batchID(now, len(rows)), ev.ID, ev.WebhookID, 1, r.status, errText, r.latency.Milliseconds(), r.answer})
		attempts := ev.Attempts + 1
		status, next := "failed", ev.NextAttempt
		outcomes[i] = outcomeFailed
		if attempts < MaxAttempts && !r.gone() {
			status, outcomes[i] = "pending", outcomeRetried
			next = dateString(now.Add(jitter(retryAfter[attempts-1])))
		}
		if _, err := stmt(d.stmts.failed).Exec(sql.Named("status", status), sql.Named("attempts", attempts),
			sql.Named("next", next), sql.Named("now", stamp), sql.Named("id", ev.ID)); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		data, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		if _, err := stmt(d.stmts.attempts).Exec(sql.Named("endpoint", to.record.Id), sql.Named("now", stamp),
			sql.Named("rows", string(data))); err != nil {
			return err
		}
	}
	if len(delivered) > 0 {
		if _, err := stmt(d.stmts.delivered).Exec(sql.Named("now", stamp), sql.Named("ids", idsJSON(delivered))); err != nil {
			return err
		}
	}
	if rest := batch[len(results):]; len(rest) > 0 {
		if _, err := stmt(d.stmts.release).Exec(sql.Named("ids", idsJSON(rest)), sql.Named("owner", d.owner)); err != nil {
			return err
		}
	}
	if len(results) == 0 {
		return nil
	}
	return d.endpointAfter(tx, to.record, results[len(results)-1], now)
}

// idsJSON is the JSON array of evs' ids.
func idsJSON(evs []event) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(ev.ID)) // ids are [a-z0-9]: Go's quoting is JSON's
	}
	b.WriteByte(']')
	return b.String()
}

// release gives events back unsent.
func (d *Deliverer) release(evs []event) {
	err := d.exec(d.stmts.release, sql.Named("ids", idsJSON(evs)), sql.Named("owner", d.owner))
	if err != nil && !errors.Is(err, writegate.ErrClosed) {
		d.cfg.Log.Error("Webhooks: could not release events", "error", err)
	}
}

// exec runs the write connection's stmt with args, in a transaction the
// gate lets commit.
func (d *Deliverer) exec(stmt *sql.Stmt, args ...any) error {
	return d.cfg.Gate.Write(d.app, func(tx core.App) error {
		sqlTx, err := database.SQLTx(tx)
		if err != nil {
			return err
		}
		_, err = sqlTx.Stmt(stmt).Exec(args...)
		return err
	})
}

// result is what one attempt got.
type result struct {
	status  int
	answer  string
	err     error
	latency time.Duration
}

func (r result) delivered() bool { return r.err == nil && r.status >= 200 && r.status < 300 }

// gone reports whether the endpoint answered 410 Gone: as Standard Webhooks
// and Svix read it, the receiver wants no more deliveries, so the event is
// not retried and the endpoint is paused.
func (r result) gone() bool { return r.status == http.StatusGone }

// post sends batch's events in order, until one fails, the deliverer
// stops or the gate closes (an event is sent only while this node may
// record its attempt); it extends the batch's lease (its first event's, pending until
// the batch is recorded) while it would end before an attempt's timeout.
// It returns the attempts' results and the slowest's latency.
func (d *Deliverer) post(client *Client, to *target, batch []event, until time.Time) ([]result, time.Duration) {
	var results []result
	var slowest time.Duration
	for _, ev := range batch {
		if d.ctx.Err() != nil || !d.cfg.Gate.Open() {
			break
		}
		if time.Until(until) < Timeout+5*time.Second {
			next := time.Now().Add(lease)
			err := d.exec(d.stmts.extend, sql.Named("until", dateString(next)), sql.Named("id", batch[0].ID), sql.Named("owner", d.owner))
			if err != nil {
				d.cfg.Log.Error("Webhooks: could not extend a lease", "error", err)
				break
			}
			until = next
		}
		r := d.postOne(client, to, ev)
		results = append(results, r)
		slowest = max(slowest, r.latency)
		if !r.delivered() {
			break
		}
	}
	return results, slowest
}

// postOne makes one attempt, a trace of its own (a client span whose
// traceparent the receiver gets), linked to the request that made the
// event: the outbox delivers later, maybe on another instance, so the
// attempt is not a child of that request's trace.
func (d *Deliverer) postOne(client *Client, to *target, ev event) (r result) {
	ctx, span := tracing.StartRoot(d.ctx, "webhook.deliver", trace.SpanKindClient, ev.Traceparent)
	began := time.Now()
	defer func() {
		r.latency = time.Since(began)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("petstore.webhook.id", ev.WebhookID), attribute.String("petstore.webhook.type", ev.Type),
				attribute.String("petstore.webhook.endpoint", ev.Endpoint), attribute.Int("petstore.webhook.attempt", ev.Attempts+1),
				attribute.Int("http.response.status_code", r.status))
			if !r.delivered() {
				span.SetStatus(codes.Error, "not delivered")
			}
		}
		span.End()
	}()
	ts := began.Unix()
	header := http.Header{
		"Content-Type":      {"application/json"},
		"User-Agent":        {"petstore-webhooks"},
		"Webhook-Id":        {ev.WebhookID},
		"Webhook-Timestamp": {strconv.FormatInt(ts, 10)},
		"Webhook-Signature": {sign(ev.WebhookID, ts, []byte(ev.Body), to.keys)},
	}
	tracing.Inject(ctx, propagation.HeaderCarrier(header))
	status, body, err := client.Post(ctx, to.url, header, ev.Body, answerLimit)
	if len(body) > answerBytes {
		body = body[:answerBytes]
	}
	r = result{status: status, answer: string(bytes.ToValidUTF8(body, nil))}
	if err != nil && (status < 200 || status > 299) {
		r.err = err
	}
	return r
}

func truncate(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// endpointAfter keeps the endpoint's failing_since after its last attempt,
// and pauses it once it has failed for pauseAfter in a row, or at once when
// it answered 410 Gone.
func (d *Deliverer) endpointAfter(tx core.App, endpoint *endpointRecord, last result, now time.Time) error {
	db := tx.NonconcurrentDB()
	since := endpoint.FailingSince()
	stamp := now.UTC().Format(time.RFC3339)
	switch {
	case last.delivered() && since.IsZero():
		return nil
	case last.delivered():
		_, err := db.NewQuery(clearFailingSQL).Bind(dbx.Params{"id": endpoint.Id}).Execute()
		return err
	case last.gone():
		if since.IsZero() {
			since = now
		}
		return d.pause(tx, endpoint, since, "Paused at "+stamp+": the endpoint answered 410 Gone, which asks for no more deliveries.")
	case since.IsZero():
		_, err := db.NewQuery(startFailingSQL).Bind(dbx.Params{"id": endpoint.Id, "now": dateString(now)}).Execute()
		return err
	case now.Sub(since) >= pauseAfter:
		return d.pause(tx, endpoint, since, "Paused at "+stamp+": every delivery failed since "+since.UTC().Format(time.RFC3339)+".")
	}
	return nil
}

// pause pauses the endpoint, failing since since, for reason, which staff
// see: logged, and audited as the system's in tx.
func (d *Deliverer) pause(tx core.App, endpoint *endpointRecord, since time.Time, reason string) error {
	res, err := tx.NonconcurrentDB().NewQuery(pauseSQL).Bind(dbx.Params{"id": endpoint.Id, "reason": reason, "since": dateString(since)}).Execute()
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return nil // paused meanwhile, or deleted
	}
	d.cfg.Log.Warn("Webhooks: an endpoint is paused", "endpoint", endpoint.Id, "reason", reason)
	return audit.Write(tx, audit.Entry{Action: audit.WebhookPaused, Webhook: endpoint.Id, By: audit.System,
		Details: pauseDetails(reason, since)})
}

// Prune deletes the attempts, and the events delivered or failed, older
// than retention.
func Prune(app core.App, retention time.Duration) error {
	cutoff := dateString(time.Now().Add(-retention))
	db := app.NonconcurrentDB()
	if _, err := db.NewQuery(pruneAttemptsSQL).Bind(dbx.Params{"cutoff": cutoff}).Execute(); err != nil {
		return err
	}
	_, err := db.NewQuery(pruneEventsSQL).Bind(dbx.Params{"cutoff": cutoff}).Execute()
	return err
}
