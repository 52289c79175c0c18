// Package requestlog writes the request log into PocketBase's logs (the
// dashboard's Logs, table _logs) in place of PocketBase's activity logger:
// the same entries, for less CPU, in bounded memory and bounded rows.
//
// PocketBase's logger hands each entry to a new goroutine, resolves it through
// slog into a map, and saves each row through its model layer, which builds
// and parses one INSERT per row and runs the model hooks; when its single
// writer falls behind, the waiting entries grow without bound. Here, a
// request queues a small struct; one goroutine writes the
// queue in batches, one transaction per batch, with INSERTs prepared once, of
// 32 rows each while there are as many, and ids that ascend (logIDs).
// When the queue is full, entries are dropped and counted, and a warning
// entry in the same log says how many: staff always see that requests went
// unlogged.
package requestlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"
	"github.com/pocketbase/pocketbase/tools/types"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Mode is what the log records.
type Mode string

const (
	// Bounded logs every request that ended in an error, and of the
	// successful ones SuccessesPerSecond a second, with one row a second
	// that counts the others.
	Bounded Mode = "bounded"
	// All logs every request, as PocketBase does.
	All Mode = "all"
	// Errors logs only the requests that ended in an error (4xx, 5xx).
	Errors Mode = "errors"
)

// ParseMode reads a Mode from a flag.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Bounded, All, Errors:
		return m, nil
	}
	return "", fmt.Errorf("request log mode %q: want %q, %q or %q", s, Bounded, All, Errors)
}

const (
	// QueueSize bounds the entries waiting to be written (each about 1 KB).
	QueueSize = 8192
	// batchSize bounds the rows of one transaction.
	batchSize = 512
	// maxURL and maxClientField bound what a client chooses in a row: the
	// URL, the User-Agent, the Referer.
	maxURL         = 1000
	maxClientField = 256
	// countsFlushEvery is how often the count rows of past minutes
	// (refusals) and seconds (successes) are written when no new request
	// writes them.
	countsFlushEvery = 5 * time.Second
	// gatherFor is how long a batch waits for more entries after its first:
	// the delay before an entry is in the log.
	gatherFor = 10 * time.Millisecond
)

// entry is one row of _logs before it is written.
type entry struct {
	level   slog.Level
	message string
	data    any // encoded as JSON: a *requestData, or a map
	created time.Time
}

// requestData is the data of a request's entry: the fields PocketBase
// logs, in the order encoding/json writes a map's keys (PocketBase's rows),
// each optional one present exactly when PocketBase's map has it, even if
// empty or null. A struct, not a map: encoding/json sorts a map's keys and
// encodes each value through an interface.
type requestData struct {
	Auth      string  `json:"auth"`
	AuthID    *string `json:"authId,omitempty"`
	Count     int64   `json:"count,omitempty"` // failures this row stands for, when more than its own (refusals.go)
	Details   *any    `json:"details,omitempty"`
	Error     *string `json:"error,omitempty"`
	ExecTime  float64 `json:"execTime"`
	Meta      any     `json:"meta,omitempty"`
	Method    string  `json:"method"`
	Referer   string  `json:"referer"`
	RemoteIP  *string `json:"remoteIP,omitempty"`
	Status    int     `json:"status"`
	Type      string  `json:"type"`
	URL       string  `json:"url"`
	UserAgent string  `json:"userAgent"`
	UserIP    *string `json:"userIP,omitempty"`
}

// Config sets what a Logger writes.
type Config struct {
	Mode Mode // what goes to _logs; default Bounded
	// Console receives the requests that the service's log shows (every
	// 5xx, with an id to find it by, the slow ones, and with AccessLog all)
	// and the writer's failures; the app's logger when nil.
	Console     *slog.Logger
	AccessLog   bool
	SlowRequest time.Duration // 0: none is slow
}

// Logger writes request log entries of a route group to _logs, and the
// requests Config names to the console.
type Logger struct {
	app  core.App
	mode Mode
	cfg  Config

	queue   chan entry
	dropped atomic.Int64
	// written counts the rows committed, coalesced the refusals counted in
	// a row of their network's instead of a row of their own, and counted
	// the successes counted in a row of their second's (Bounded).
	written, coalesced, counted atomic.Int64
	stopped                     atomic.Bool
	stop                        chan struct{}
	done                        chan struct{}
	// insertRows writes rowsPerInsert rows, insertRow one; args holds
	// their arguments.
	insertRows, insertRow *sql.Stmt
	args                  []any
	ids                   *logIDs
	db                    *sql.DB
	once                  sync.Once
	refusals              *refusals
	successes             *successes
}

// Start prepares the writer on app's auxiliary database, where PocketBase
// keeps its logs, and starts it. Stop writes what is queued and stops it.
func Start(app core.App, cfg Config) (*Logger, error) {
	if cfg.Console == nil {
		cfg.Console = app.Logger()
	}
	mode := cfg.Mode
	if mode == "" {
		mode = Bounded
	}
	aux, ok := app.AuxNonconcurrentDB().(*dbx.DB)
	if !ok {
		return nil, fmt.Errorf("the app's log database is a %T, not a *dbx.DB", app.AuxNonconcurrentDB())
	}
	db := aux.DB()
	insertRows, err := db.Prepare(insertSQL(rowsPerInsert))
	if err != nil {
		return nil, fmt.Errorf("prepare the request log: %w", err)
	}
	insertRow, err := db.Prepare(insertSQL(1))
	if err != nil {
		insertRows.Close()
		return nil, fmt.Errorf("prepare the request log: %w", err)
	}
	l := &Logger{
		app: app, mode: mode, cfg: cfg, db: db, insertRows: insertRows, insertRow: insertRow, ids: newLogIDs(),
		queue: make(chan entry, QueueSize), stop: make(chan struct{}), done: make(chan struct{}),
		refusals: newRefusals(), successes: &successes{},
	}
	go l.run()
	return l, nil
}

// Stop writes the queued entries and stops the writer. Entries logged after
// Stop are dropped.
func (l *Logger) Stop() {
	l.once.Do(func() {
		for _, en := range append(l.refusals.due(time.Time{}), l.successes.due(time.Time{})...) {
			l.enqueue(en)
		}
		l.stopped.Store(true)
		close(l.stop)
		<-l.done
	})
}

// Dropped is how many entries were dropped so far because the queue, or
// the minute's table of refusals, was full.
func (l *Logger) Dropped() int64 { return l.dropped.Load() }

// Written is how many rows were committed to the log so far.
func (l *Logger) Written() int64 { return l.written.Load() }

// Coalesced is how many failed requests were counted in their network's
// row of the minute instead of a row of their own.
func (l *Logger) Coalesced() int64 { return l.coalesced.Load() }

// Counted is how many successful requests were counted in their second's
// row instead of a row of their own (Bounded).
func (l *Logger) Counted() int64 { return l.counted.Load() }

// Middleware replaces PocketBase's activity logger (same id and priority) in
// the group it is bound to, /v1: the rows of its requests, and the console
// lines of the ones Config names.
func (l *Logger) Middleware() *hook.Handler[*core.RequestEvent] { return l.middleware(true) }

// SiteMiddleware replaces PocketBase's activity logger everywhere else (the
// pages, the dashboard, PocketBase's API): their rows, bounded as /v1's,
// where PocketBase's logger writes every request whole and buffers without
// bound, but none for a passing health check (a load balancer's probes
// would be most rows). It writes no console lines: the realtime stream's
// long requests are no slow requests, and the console's lines are /v1's.
func (l *Logger) SiteMiddleware() *hook.Handler[*core.RequestEvent] { return l.middleware(false) }

func (l *Logger) middleware(v1 bool) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       apis.DefaultActivityLoggerMiddlewareId,
		Priority: apis.DefaultActivityLoggerMiddlewarePriority,
		Func: func(e *core.RequestEvent) error {
			started := time.Now()
			err := e.Next()
			if v1 {
				l.row(e, err, started)
				l.toConsole(e, err, time.Since(started))
			} else if err != nil || e.Status() >= 400 || !healthChecks[e.Request.URL.Path] {
				l.row(e, err, started)
			}
			return err
		},
	}
}

// healthChecks are the paths of the health checks, whose answers get no
// row unless they fail.
var healthChecks = map[string]bool{"/api/health": true, "/healthz": true, "/readyz": true}

// row queues the request's row, if it gets one: failures are bounded per
// client network and minute (refusals.go), successes per second (Bounded).
func (l *Logger) row(e *core.RequestEvent, err error, started time.Time) {
	if !l.logs(e, err, started) {
		return
	}
	en, ok := requestEntry(e, err, started)
	if !ok {
		return
	}
	if !failed(en.status()) {
		l.enqueue(en)
		return
	}
	due, held := l.refusals.add(e.RealIP(), en)
	switch held {
	case refusalCounted:
		l.coalesced.Add(1)
	case refusalDropped:
		l.dropped.Add(1)
	}
	for _, d := range due {
		l.enqueue(d)
	}
}

// logs reports whether the request gets a row of its own (so far as the
// mode decides; the refusals' and the settings' bounds come after).
func (l *Logger) logs(e *core.RequestEvent, err error, started time.Time) bool {
	failed := err != nil || e.Status() >= 400
	switch {
	case failed || l.mode == All:
		return true
	case l.mode == Errors:
		return false
	}
	admitted, due := l.successes.admit(started)
	for _, d := range due {
		l.enqueue(d)
	}
	if !admitted {
		l.counted.Add(1)
	}
	return admitted
}

// requestEntry is the entry PocketBase's activity logger would write
// (apis.logRequest): the same message, level and data, so the dashboard shows
// and filters them alike. It is false when the settings log nothing.
func requestEntry(e *core.RequestEvent, err error, started time.Time) (entry, bool) {
	settings := e.App.Settings()
	if settings.Logs.MaxDays == 0 { // no retention: PocketBase logs nothing either
		return entry{}, false
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelError
	}
	if level < slog.Level(settings.Logs.MinLevel) {
		return entry{}, false
	}

	status := e.Status()
	method := cut(strings.ToUpper(e.Request.Method), 50)
	uri := cut(e.Request.URL.RequestURI(), maxURL)
	data := &requestData{
		Type:     "request",
		ExecTime: float64(time.Since(started)) / float64(time.Millisecond),
		Meta:     e.Get(apis.RequestEventKeyLogMeta),
	}
	if err != nil {
		message := err.Error()
		var apiErr *router.ApiError
		if errors.As(err, &apiErr) {
			if status == 0 {
				status = apiErr.Status
			}
			if plain, ok := err.(*router.ApiError); ok {
				message = plain.Message
			}
			details := apiErr.RawData()
			data.Details = &details
		}
		data.Error = &message
	}
	data.URL = uri
	data.Method = method
	data.Status = status
	data.Referer = cut(e.Request.Referer(), maxClientField)
	data.UserAgent = cut(e.Request.UserAgent(), maxClientField)
	if e.Auth != nil {
		data.Auth = e.Auth.Collection().Name
		if settings.Logs.LogAuthId {
			id := e.Auth.Id
			data.AuthID = &id
		}
	}
	if settings.Logs.LogIP {
		userIP, remoteIP := e.RealIP(), e.RemoteIP()
		data.UserIP, data.RemoteIP = &userIP, &remoteIP
	}
	message := method + " " + uri
	if unescaped, err := url.PathUnescape(uri); err == nil {
		message = method + " " + unescaped
	}
	return entry{level: level, message: message, data: data, created: time.Now()}, true
}

// StatusOf is the status of the request's answer: the one written, or,
// when an error is still to be written by an outer layer, the error's
// (PocketBase's error handler answers sql.ErrNoRows with a 404, and any
// other error that is not an ApiError with a 400).
func StatusOf(e *core.RequestEvent, err error) int {
	if status := e.Status(); status != 0 || err == nil {
		return status
	}
	var apiErr *router.ApiError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Status
	case errors.Is(err, sql.ErrNoRows):
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

func (l *Logger) enqueue(en entry) {
	if l.stopped.Load() {
		l.dropped.Add(1)
		return
	}
	select {
	case l.queue <- en:
	default:
		l.dropped.Add(1)
	}
}

// run writes the queue in batches: the entries that arrive within
// gatherFor of a batch's first one (up to batchSize), in one transaction.
// Without the wait, a busy server (13,000 requests a second) wrote batches of
// about 9 entries, each with its own commit, which writes every page the
// batch changed.
func (l *Logger) run() {
	defer close(l.done)
	batch := make([]entry, 0, batchSize)
	gather := time.NewTimer(gatherFor)
	gather.Stop()
	var reported int64
	// The counts of a minute's refusals and of a second's successes are
	// written once it ends, even when no later request comes to take them.
	due := time.NewTicker(countsFlushEvery)
	defer due.Stop()
	for {
		select {
		case en := <-l.queue:
			batch = append(batch[:0], en)
		case now := <-due.C:
			if batch = append(append(batch[:0], l.refusals.due(now)...), l.successes.due(now)...); len(batch) == 0 {
				continue
			}
		case <-l.stop:
			for len(l.queue) > 0 {
				batch = l.fill(batch[:0])
				l.write(batch)
			}
			l.reportDropped(&reported)
			return
		}
		if len(l.queue) < batchSize-1 { // a full batch waits for nothing
			gather.Reset(gatherFor)
			select {
			case <-gather.C:
			case <-l.stop: // written at once, then drained above
			}
		}
		batch = l.fill(batch)
		l.write(batch)
		l.reportDropped(&reported)
	}
}

// fill adds the queued entries to batch, up to batchSize, without waiting.
func (l *Logger) fill(batch []entry) []entry {
	for len(batch) < batchSize {
		select {
		case en := <-l.queue:
			batch = append(batch, en)
		default:
			return batch
		}
	}
	return batch
}

// reportDropped writes a warning entry when entries were dropped since the
// last report.
func (l *Logger) reportDropped(reported *int64) {
	dropped := l.dropped.Load()
	if dropped == *reported {
		return
	}
	n := dropped - *reported
	*reported = dropped
	l.write([]entry{{
		level:   slog.LevelWarn,
		message: fmt.Sprintf("Request log: %d requests were not logged because the log writer could not keep up", n),
		data:    map[string]any{"type": "requestlog", "dropped": n, "droppedTotal": dropped},
		created: time.Now(),
	}})
}

func (l *Logger) write(batch []entry) {
	if len(batch) == 0 {
		return
	}
	err := l.insert(batch)
	var clash *sqlite.Error
	if errors.As(err, &clash) && clash.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
		l.ids.newTag() // another writer's ids (see logIDs)
		err = l.insert(batch)
	}
	if err != nil {
		// PocketBase's own logger, which reaches the console as well.
		l.cfg.Console.Error("Could not write the request log", "entries", len(batch), "error", err)
		return
	}
	l.written.Add(int64(len(batch)))
}

// insert writes batch in one transaction, rowsPerInsert rows per
// statement while there are as many, then one.
func (l *Logger) insert(batch []entry) error {
	tx, err := l.db.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insertRows, insertRow := tx.Stmt(l.insertRows), tx.Stmt(l.insertRow)
	now := time.Now()
	for len(batch) > 0 {
		n, stmt := 1, insertRow
		if len(batch) >= rowsPerInsert {
			n, stmt = rowsPerInsert, insertRows
		}
		l.args = l.args[:0]
		for _, en := range batch[:n] {
			l.args = en.appendRow(l.args, l.ids.next(now))
		}
		if _, err := stmt.Exec(l.args...); err != nil {
			return err
		}
		batch = batch[n:]
	}
	return tx.Commit()
}

// rowsPerInsert is how many rows one INSERT writes. Within a statement,
// SQLite keeps its cursors on _logs' b-trees open from row to row, and a key
// that goes at the end of one (an ascending id, the current hour) needs no
// seek from the root, where a statement per row seeks every row from the
// root of all five b-trees. BenchmarkWrite compares the sizes.
const rowsPerInsert = 32

func insertSQL(rows int) string {
	values := strings.Repeat(", (?, ?, ?, ?, ?)", rows)[len(", "):]
	return "INSERT INTO " + core.LogsTableName + " (id, level, message, data, created) VALUES " + values
}

// appendRow appends the entry's row, with id, to an INSERT's arguments.
func (en entry) appendRow(args []any, id string) []any {
	data, err := json.Marshal(en.data)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"type": "request", "marshalError": err.Error()})
	}
	created, _ := types.ParseDateTime(en.created)
	return append(args, id, int(en.level), en.message, string(data), created.String())
}

func cut(s string, max int) string {
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
