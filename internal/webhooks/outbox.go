package webhooks

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/security"
	"github.com/pocketbase/pocketbase/tools/types"

	"petstore/internal/database"
	"petstore/internal/dataversion"
)

// Outbox writes events, in the transaction of their cause, for the
// endpoints subscribed to their type.
//
// Once Watch is called (serve), it keeps the subscriptions in memory, read
// again whenever the endpoints' table has changed (a change here, on
// another instance, or in the dashboard: package dataversion): with no endpoint subscribed to an
// event's type, writing the event costs no SQL. Each write first asks the
// data version, so that an endpoint changed on another instance counts for
// the very next event here. Before Watch (the keys command), each event
// reads the subscriptions in its transaction.
type Outbox struct {
	app core.App

	version atomic.Pointer[func() (dataversion.Version, error)] // nil: read in each transaction
	mu      sync.Mutex                                          // one refresh at a time
	subs    atomic.Pointer[subscriptions]
	inserts atomic.Pointer[inserts] // prepared by Watch; nil: parsed each time

	wake chan struct{} // an event committed: the deliverer looks now
}

// inserts are insertEventSQL and insertEventsSQL, prepared.
type inserts struct{ one, many *sql.Stmt }

// subscriptions are the endpoints that are not paused, by event type, as
// read at a version of the endpoints' table.
type subscriptions struct {
	version int64 // a dataversion.Version's Of(EndpointsCollection)
	byType  map[Type][]string
}

// NewOutbox is app's outbox.
func NewOutbox(app core.App) *Outbox {
	return &Outbox{app: app, wake: make(chan struct{}, 1)}
}

// Watch makes the outbox keep the subscriptions in memory, read again when
// version (a dataversion.Watch's Version) says the endpoints' table changed
// since they were read,
// and prepares its inserts on the write connection. Close closes them.
func (o *Outbox) Watch(version func() (dataversion.Version, error)) error {
	db, err := database.WriteDB(o.app)
	if err != nil {
		return err
	}
	var ins inserts
	if ins.one, err = db.Prepare(insertEventSQL); err != nil {
		return fmt.Errorf("webhooks: prepare the outbox's insert: %w", err)
	}
	if ins.many, err = db.Prepare(insertEventsSQL); err != nil {
		_ = ins.one.Close()
		return fmt.Errorf("webhooks: prepare the outbox's insert: %w", err)
	}
	if old := o.inserts.Swap(&ins); old != nil {
		old.close()
	}
	o.version.Store(&version)
	return o.refresh()
}

// Close closes the inserts Watch prepared; later events parse them each
// time.
func (o *Outbox) Close() error {
	if ins := o.inserts.Swap(nil); ins != nil {
		ins.close()
	}
	return nil
}

func (ins *inserts) close() {
	_ = ins.one.Close()
	_ = ins.many.Close()
}

// refresh reads the subscriptions again if the endpoints' table changed
// since they were read; every write of events calls it, and the
// deliverer every tick.
func (o *Outbox) refresh() error {
	vp := o.version.Load()
	if vp == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	version, err := (*vp)()
	if err != nil {
		return err
	}
	v := version.Of(EndpointsCollection)
	if s := o.subs.Load(); s != nil && s.version == v {
		return nil
	}
	byType, err := readSubscriptions(o.app.ConcurrentDB())
	if err != nil {
		return err
	}
	o.subs.Store(&subscriptions{version: v, byType: byType})
	return nil
}

// endpointIDs are the ids of the endpoints that are not paused, every one
// of them in byType's lists.
func (s *subscriptions) endpointIDs() []string {
	var ids []string
	for _, list := range s.byType {
		for _, id := range list {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// readSubscriptions reads which endpoints, not paused, want each type.
func readSubscriptions(db dbx.Builder) (map[Type][]string, error) {
	var rows []struct {
		ID     string        `db:"id"`
		Events types.JSONRaw `db:"events"`
	}
	err := db.NewQuery(subscriptionsSQL).All(&rows)
	if err != nil {
		return nil, fmt.Errorf("webhooks: read the endpoints: %w", err)
	}
	byType := map[Type][]string{}
	for _, r := range rows {
		var events []Type
		if len(r.Events) > 0 {
			if err := json.Unmarshal(r.Events, &events); err != nil {
				return nil, fmt.Errorf("webhooks: the events of endpoint %s: %w", r.ID, err)
			}
		}
		for _, t := range events {
			byType[t] = append(byType[t], r.ID)
		}
	}
	return byType, nil
}

// subscriptionsIn is which endpoints want each type of event, as of the
// data version now: before Watch read in tx; after, kept, and read again
// first if the endpoints' table changed (refresh), since the deliverer
// looks only once a second and an endpoint changed on another instance
// would go unseen here until then.
func (o *Outbox) subscriptionsIn(tx core.App) (map[Type][]string, error) {
	if o.version.Load() == nil {
		return readSubscriptions(tx.NonconcurrentDB())
	}
	if err := o.refresh(); err != nil {
		return nil, err
	}
	if s := o.subs.Load(); s != nil {
		return s.byType, nil
	}
	return nil, nil
}

// subscribed reports whether an endpoint wants events of type t, as of the
// data version now (true before Watch: the transaction reads), for a cause
// that would open a transaction only to write such an event.
func (o *Outbox) subscribed(t Type) (bool, error) {
	if o.version.Load() == nil {
		return true, nil
	}
	byType, err := o.subscriptionsIn(nil) // after Watch: no transaction read
	return len(byType[t]) > 0, err
}

// Body is an event's JSON body.
type Body struct {
	Type      Type      `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// encode is b as JSON, without escaping HTML characters (as /v1 writes
// JSON), without a final newline.
func (b Body) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Event is one event to write.
type Event struct {
	Type Type
	Data any
	// Dedupe, when not empty, writes the event once per endpoint whatever
	// writes it how often, on whichever instance (a unique index).
	Dedupe string
	// Traceparent names the span of the request that made the event
	// (tracing.Traceparent), which its deliveries link to; "" for none.
	Traceparent string
}

// Write writes events, with tx (the transaction of their cause), each for
// every endpoint subscribed to its type, in order, in one statement. With
// none subscribed, it writes nothing, and after Watch reads nothing either.
func (o *Outbox) Write(tx core.App, events ...Event) error {
	byType, err := o.subscriptionsIn(tx)
	if err != nil {
		return err
	}
	return o.writeFor(tx, byType, events)
}

// writeFor is Write with the subscriptions already asked (subscriptionsIn).
func (o *Outbox) writeFor(tx core.App, byType map[Type][]string, events []Event) error {
	now := time.Now().UTC()
	var rows []eventRow
	for _, e := range events {
		endpoints := byType[e.Type]
		if len(endpoints) == 0 {
			continue
		}
		more, err := eventRows(e, endpoints, now)
		if err != nil {
			return err
		}
		rows = append(rows, more...)
	}
	return o.write(tx, rows, now)
}

// WriteTo writes e for one endpoint, whatever its subscriptions (staff's
// test event).
func (o *Outbox) WriteTo(app core.App, endpoint string, e Event) error {
	now := time.Now().UTC()
	rows, err := eventRows(e, []string{endpoint}, now)
	if err != nil {
		return err
	}
	return o.write(app, rows, now)
}

// eventRow is one event for one endpoint, as the outbox stores it.
type eventRow struct {
	ID, WebhookID, Endpoint, Type, Body, Dedupe, Traceparent string
}

// eventRows are e's rows for endpoints: one body and webhook-id for all.
func eventRows(e Event, endpoints []string, now time.Time) ([]eventRow, error) {
	body, err := Body{Type: e.Type, Timestamp: now.Truncate(time.Second), Data: e.Data}.encode()
	if err != nil {
		return nil, fmt.Errorf("webhooks: encode a %s event: %w", e.Type, err)
	}
	// The webhook-id is a receiver's idempotency key, not a secret: unique
	// is enough (24 of 62 characters from a generator seeded by the OS).
	webhookID := "msg_" + security.PseudorandomString(24)
	rows := make([]eventRow, len(endpoints))
	for i, endpoint := range endpoints {
		rows[i] = eventRow{WebhookID: webhookID, Endpoint: endpoint, Type: string(e.Type), Body: string(body), Dedupe: e.Dedupe, Traceparent: e.Traceparent}
	}
	return rows, nil
}

// write inserts rows, with new sortable ids: one by one, or, several, in
// one statement. A row that statement leaves out (its endpoint gone, its
// dedupe text taken, or its id: rare, and then the row comes after the
// others) goes in alone.
func (o *Outbox) write(tx core.App, rows []eventRow, now time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	w, err := o.writer(tx)
	if err != nil {
		return err
	}
	stamp := dateString(now)
	if len(rows) > 1 {
		data := make([][]string, len(rows))
		for i := range rows {
			rows[i].ID = batchID(now, i)
			r := rows[i]
			data[i] = []string{r.ID, r.WebhookID, r.Endpoint, r.Type, r.Body, r.Dedupe, r.Traceparent}
		}
		encoded, err := json.Marshal(data)
		if err != nil {
			return err
		}
		res, err := w.exec(insertEventsSQL, sql.Named("rows", string(encoded)), sql.Named("now", stamp))
		if err != nil {
			return fmt.Errorf("webhooks: write %d events: %w", len(rows), err)
		}
		if n, err := res.RowsAffected(); err != nil || int(n) == len(rows) {
			return o.written(tx, err)
		}
		var left []eventRow
		for _, r := range rows {
			var webhookID string
			err := w.query(eventWebhookIDSQL, r.ID).Scan(&webhookID)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if webhookID != r.WebhookID {
				left = append(left, r)
			}
		}
		rows = left
	}
	for _, r := range rows {
		if err := w.insertEvent(sql.Named("webhookId", r.WebhookID), sql.Named("endpoint", r.Endpoint),
			sql.Named("type", r.Type), sql.Named("body", r.Body), sql.Named("now", stamp),
			sql.Named("dedupe", r.Dedupe), sql.Named("traceparent", r.Traceparent)); err != nil {
			return fmt.Errorf("webhooks: write a %s event: %w", r.Type, err)
		}
	}
	return o.written(tx, nil)
}

// written wakes the deliverer once tx commits (at once outside one), unless
// err.
func (o *Outbox) written(tx core.App, err error) error {
	if err != nil {
		return err
	}
	if info := tx.TxInfo(); info != nil {
		info.OnComplete(func(txErr error) error {
			if txErr == nil {
				o.Wake()
			}
			return txErr
		})
	} else {
		o.Wake()
	}
	return nil
}

// maxIDAttempts bounds the ids an event tries: sortable ids have fewer
// random characters than PocketBase's.
const maxIDAttempts = 5

// eventWriter runs the outbox's statements on app's write connection: in
// its transaction, if any; prepared ones if Watch prepared them.
type eventWriter struct {
	prepared *inserts
	tx       *sql.Tx // nil: db
	db       *sql.DB
}

func (o *Outbox) writer(app core.App) (eventWriter, error) {
	w := eventWriter{prepared: o.inserts.Load()}
	var err error
	if app.IsTransactional() {
		w.tx, err = database.SQLTx(app)
	} else {
		w.db, err = database.WriteDB(app)
	}
	return w, err
}

// exec runs query, or its prepared statement.
func (w eventWriter) exec(query string, args ...any) (sql.Result, error) {
	var stmt *sql.Stmt
	if w.prepared != nil {
		stmt = w.prepared.one
		if query == insertEventsSQL {
			stmt = w.prepared.many
		}
	}
	switch {
	case stmt == nil && w.tx != nil:
		return w.tx.Exec(query, args...)
	case stmt == nil:
		return w.db.Exec(query, args...)
	case w.tx != nil:
		s := w.tx.Stmt(stmt)
		defer s.Close()
		return s.Exec(args...)
	}
	return stmt.Exec(args...)
}

func (w eventWriter) query(query string, args ...any) *sql.Row {
	if w.tx != nil {
		return w.tx.QueryRow(query, args...)
	}
	return w.db.QueryRow(query, args...)
}

// insertEvent inserts one event with a new sortable id. When no row is
// written, the endpoint is gone or the dedupe text is taken, unless the id
// is: then it tries another.
func (w eventWriter) insertEvent(args ...any) error {
	for range maxIDAttempts {
		id := sortableID(time.Now())
		res, err := w.exec(insertEventSQL, append(args, sql.Named("id", id))...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var taken int
		if err := w.query(eventTakenSQL, id).Scan(&taken); err != nil || taken == 0 {
			return err
		}
	}
	return errors.New("no free id")
}

// batchID is a sortable id for a statement's i-th row: its 9th and 10th
// characters are i, so that the ids of one millisecond's statement differ.
func batchID(now time.Time, i int) string {
	b := []byte(sortableID(now))
	b[8], b[9] = idAlphabet[i/36%36], idAlphabet[i%36]
	return string(b)
}

// idAlphabet is PocketBase's ids' alphabet, in ASCII order.
const idAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// sortableID is a record id as PocketBase's (15 of [a-z0-9]) that sorts by
// time: 8 characters of base 36 milliseconds since 1970 (until 2059), then
// 7 random ones. The outbox's and the attempts' rows are written in the
// order of their ids, so each id index grows at its end, on the page the
// last write dirtied, not on a page of its own anywhere in the index.
func sortableID(t time.Time) string {
	var b [15]byte
	ms := uint64(t.UnixMilli())
	for i := 7; i >= 0; i-- {
		b[i] = idAlphabet[ms%36]
		ms /= 36
	}
	for i := 8; i < len(b); i++ {
		b[i] = idAlphabet[rand.IntN(len(idAlphabet))]
	}
	return string(b[:])
}

// Wake tells the deliverer that events wait, without waiting for it.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// dateString is t as PocketBase stores dates: text that sorts as time does.
func dateString(t time.Time) string {
	d, _ := types.ParseDateTime(t.UTC())
	return d.String()
}

// Pending is how many events wait for delivery, of every instance.
func Pending(db *sql.DB) (n int64, err error) {
	err = db.QueryRow(pendingSQL).Scan(&n)
	return n, err
}
