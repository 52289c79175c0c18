package hooks

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// ServerConfig sets the HTTP server limits PocketBase leaves open-ended.
type ServerConfig struct {
	// ReadHeaderTimeout closes connections whose request headers have not all
	// arrived in time (slowloris). PocketBase's own is 1 minute.
	ReadHeaderTimeout time.Duration
	// ShutdownTimeout is how long SIGTERM lets in-flight requests finish.
	// PocketBase's own is 1 second.
	ShutdownTimeout time.Duration
	// DrainDelay is how long, after SIGTERM, the server keeps serving while
	// /readyz answers 503, so that a load balancer stops sending new
	// requests before the listener closes. Zero closes it at once.
	DrainDelay time.Duration
}

// Defaults of ServerConfig.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
)

const (
	serverHookId         = "petstoreServer"
	shutdownHookId       = "petstoreGracefulShutdown"
	shutdownHookPriority = -10000 // before PocketBase's pbGracefulShutdown (-9999)
)

// bindServer applies cfg to the server when it starts, and on termination
// drains it: draining turns true (/readyz answers 503), the server keeps
// serving for cfg.DrainDelay, then the listener closes (new connections are
// refused) and requests in flight get cfg.ShutdownTimeout to finish. PocketBase's own
// shutdown then finds nothing left to cut off after its 1 second, and the
// hooks after it (rate-limit flush, log writer, database close) run once no
// request is being served.
func bindServer(app core.App, cfg *ServerConfig, service *Service) {
	var server atomic.Pointer[http.Server]
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: serverHookId,
		Func: func(se *core.ServeEvent) error {
			se.Server.ReadHeaderTimeout = orDefault(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
			server.Store(se.Server)
			return se.Next()
		},
	})
	app.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       shutdownHookId,
		Priority: shutdownHookPriority,
		Func: func(te *core.TerminateEvent) error {
			// A restart (after a backup restore) is left to PocketBase's own
			// shutdown, which holds serve open until it has replaced the
			// process: drained here first, serve would return at once, and
			// the command's end would stop the service a second time and
			// exit 0 instead of restarting.
			if s := server.Load(); s != nil && !te.IsRestart {
				service.draining.Store(true)
				started := time.Now()
				service.log.Info("petstore stopping", "drainDelay", cfg.DrainDelay.String())
				time.Sleep(cfg.DrainDelay)
				timeout := orDefault(cfg.ShutdownTimeout, DefaultShutdownTimeout)
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				if err := s.Shutdown(ctx); err != nil {
					service.log.Warn("Requests still running at the end of the shutdown bound are cut off",
						"shutdownTimeout", timeout.String(), "error", err)
				}
				service.log.Info("petstore stopped serving", "drained", time.Since(started).Round(time.Millisecond).String())
			}
			return te.Next()
		},
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
