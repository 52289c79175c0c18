// Package hooks binds petstore to a PocketBase app: the /v1 routes and their
// middleware, the embedded site, and the record hooks of pets and API keys.
package hooks

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/apikeys"
	"petstore/dataversion"
	"petstore/idempotency"
	"petstore/limits"
	"petstore/openapi"
	"petstore/requestlog"
	"petstore/staff"
	"petstore/usage"
)

// Options configure the service. Register keeps the pointer: command-line
// flags fill it in after Register and before `serve` starts.
type Options struct {
	Public fs.FS // the site served at / (pb_public, embedded in the binary)
	// Banner receives serve's start-up lines (where /v1, /docs/, /staff/ and
	// the dashboard are); nil prints none.
	Banner io.Writer
	HTTPS  bool // serve --https: the banner's addresses are https
	Limits limits.Config
	Server ServerConfig
	// Now is the service's clock for dates it acts on (getPet's sunset);
	// time.Now when nil. Only tests set it.
	Now func() time.Time
	// RequestLog is what /v1 writes to PocketBase's logs; default all.
	RequestLog requestlog.Mode
}

// Service is what Register bound; Err tells why serving could not start.
type Service struct {
	err error
}

// Err is the error that stopped `serve` from starting, if any. PocketBase
// does not turn it into an exit status; main does.
func (s *Service) Err() error { return s.err }

// Register binds everything petstore adds to app.
func Register(app core.App, opts *Options) *Service {
	s := &Service{}
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: "petstoreServe",
		Func: func(se *core.ServeEvent) error {
			limiter, err := limits.New(opts.Limits, keyLedger{app}, app.Logger())
			if err != nil {
				s.err = err
				return err
			}
			bindLimiterHooks(app, limiter)
			keys, pets, err := prepareReads(app)
			if err != nil {
				s.err = err
				return err
			}
			petWrites, err := preparePetWrites(app)
			if err != nil {
				s.err = err
				return err
			}
			history, err := usage.Start(app, 0)
			if err != nil {
				s.err = err
				return err
			}
			bindUsageHooks(app, history)

			reqlog, err := requestlog.Start(app, opts.RequestLog)
			if err != nil {
				s.err = err
				return err
			}
			bindRequestLogHooks(app, reqlog)

			now := opts.Now
			if now == nil {
				now = time.Now
			}
			addRoutes(se.Router.Group("/v1"), limiter, keys, pets, petWrites, reqlog, history, now)
			staff.AddRoutes(se.Router, history)
			// The reference page's copy of the contract, outside /v1 and so not
			// counted: the page renders for visitors whose address is over its
			// keyless limit (behind a shared NAT, everyone's).
			se.Router.GET("/docs/openapi.json", serveDocument(openapi.JSON, "application/json"))
			// Method-less, or it would conflict with the method-less /v1 routes.
			se.Router.Route("", "/{path...}", staticSite(opts.Public))

			if err := se.Next(); err != nil {
				s.err = err
				return err
			}
			// The handler exists only once the mux is built, in Next.
			se.Server.Handler = restoreRequestBody(uncleanPathGuard(se.Server.Handler))
			return nil
		},
	})
	bindServer(app, &opts.Server)
	bindBanner(app, opts)
	bindPetRecordHooks(app)
	bindAPIKeyRecordHooks(app)
	idempotency.BindPurge(app)
	return s
}

const readPoolIdleConns = 32

// prepareReads prepares the reads every /v1 request makes (its API key, the
// pets) on app.ConcurrentDB(), PocketBase's pool for reads.
func prepareReads(app core.App) (*apikeys.Finder, *petReads, error) {
	db, ok := app.ConcurrentDB().(*dbx.DB)
	if !ok {
		return nil, nil, fmt.Errorf("the app's read pool is a %T, not a *dbx.DB", app.ConcurrentDB())
	}
	// Prepared statements live on connections: a connection the pool closes
	// takes them along, and a new one opens, loads the schema and prepares
	// again. PocketBase keeps 15 idle connections of up to 120; under 64
	// concurrent requests, opening connections took 15 % of listPets' CPU.
	// Each kept connection holds its own page cache, hence a bound, and
	// connections idle for a minute close, giving their memory back.
	db.DB().SetMaxIdleConns(readPoolIdleConns)
	db.DB().SetConnMaxIdleTime(time.Minute)
	version, err := dataversion.NewWatch(db.DB())
	if err != nil {
		return nil, nil, err
	}
	bindDataVersionHooks(app, version)
	keys, err := apikeys.NewFinder(db.DB())
	if err != nil {
		return nil, nil, err
	}
	pets, err := preparePetReads(db.DB(), version)
	return keys, pets, err
}

// bindDataVersionHooks gives the watch's connection back to the read pool
// when the app stops, with the other stops, before the databases close.
func bindDataVersionHooks(app core.App, w *dataversion.Watch) {
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       "petstoreDataVersionClose",
		Priority: -9000,
		Func: func(e *core.TerminateEvent) error {
			if err := w.Close(); err != nil {
				e.App.Logger().Error("Could not close the data version watch", "error", err)
			}
			return e.Next()
		},
	})
}

func staticSite(public fs.FS) func(*core.RequestEvent) error {
	serve := apis.Static(public, false)
	return func(e *core.RequestEvent) error {
		if e.Request.Method != http.MethodGet && e.Request.Method != http.MethodHead {
			e.Response.Header().Set("Allow", "GET, HEAD")
			return e.Error(http.StatusMethodNotAllowed, "Method not allowed.", nil)
		}
		return serve(e)
	}
}

// bindPetRecordHooks applies the pets rules (pets_write.go) to pets saved
// as records: in the dashboard or through PocketBase's records API.
func bindPetRecordHooks(app core.App) {
	normalize := func(e *core.RecordEvent) error {
		e.Record.Set("name", petName(e.Record.GetString("name")))
		return e.Next()
	}
	app.OnRecordCreate(petsCollection).BindFunc(func(e *core.RecordEvent) error {
		e.Record.Set("status", newPetStatus(e.Record.GetString("status")))
		return normalize(e)
	})
	app.OnRecordUpdate(petsCollection).BindFunc(normalize)
}

// bindRequestLogHooks writes the queued request log at a stop, after the
// requests in flight (PocketBase's graceful shutdown, -9999) and before the
// databases close.
func bindRequestLogHooks(app core.App, l *requestlog.Logger) {
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       "petstoreRequestLogStop",
		Priority: -9000,
		Func: func(e *core.TerminateEvent) error {
			l.Stop()
			return e.Next()
		},
	})
}

// bindLimiterHooks saves the day counts when the app stops.
func bindLimiterHooks(app core.App, l *limits.Limiter) {
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id: "petstoreLimiterClose",
		// After PocketBase's graceful shutdown (-9999): no request is counted
		// after the last save.
		Priority: -9000,
		Func: func(e *core.TerminateEvent) error {
			if err := l.Close(); err != nil {
				e.App.Logger().Error("Could not save rate-limit state at shutdown", "error", err)
			}
			return e.Next()
		},
	})
}

// bindUsageHooks saves the usage history still in memory when the app stops.
func bindUsageHooks(app core.App, history *usage.Recorder) {
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       "petstoreUsageClose",
		Priority: -9000, // after PocketBase's graceful shutdown (-9999), like the limiter's
		Func: func(e *core.TerminateEvent) error {
			if err := history.Close(); err != nil {
				e.App.Logger().Error("Could not save the usage history of API keys at shutdown", "error", err)
			}
			return e.Next()
		},
	})
}
