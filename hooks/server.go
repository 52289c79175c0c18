package hooks

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/connlimit"
	"petstore/internal/logging"
	"petstore/internal/options"
)

const (
	serverHookId   = "petstoreServer"
	listenerHookId = "petstoreListener"
	// listenerHookPriority runs the listener's wrapping after every other
	// OnServe handler, whichever of them set the listener.
	listenerHookPriority = 10000
)

// bindServer keeps the server when it starts (serve guards it), bounds the
// connections of its listener with service.conns, and on termination
// drains it: draining turns true (/readyz answers 503), the server keeps
// serving for cfg.DrainDelay, then the listener closes (new connections are
// refused) and requests in flight get cfg.ShutdownTimeout to finish. PocketBase's own
// shutdown then finds nothing left to cut off after its 1 second, and the
// hooks after it (rate-limit flush, log writer, database close) run once no
// request is being served.
func bindServer(app core.App, cfg options.Server, https bool, service *Service) {
	var server atomic.Pointer[http.Server]
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: serverHookId,
		Func: func(se *core.ServeEvent) error {
			server.Store(se.Server)
			return se.Next()
		},
	})
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id:       listenerHookId,
		Priority: listenerHookPriority,
		Func: func(se *core.ServeEvent) error {
			if se.Listener == nil && service.listener != nil {
				// The cluster node's, which listened from the start.
				se.Listener = service.listener
			}
			if se.Listener == nil {
				// PocketBase's own listener, made here to be wrapped.
				addr := se.Server.Addr
				switch {
				case addr != "":
				case https:
					addr = ":https"
				default:
					addr = ":http"
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return err
				}
				se.Listener = ln
			}
			se.Listener = service.conns.Wrap(se.Listener)
			return se.Next()
		},
	})
	bindStop(app, drainStepId, service.log, func(te *core.TerminateEvent) error {
		// A restart (after a backup restore) is left to PocketBase's own
		// shutdown, which holds serve open until it has replaced the
		// process: drained here first, serve would return at once, and
		// the command's end would stop the service a second time and
		// exit 0 instead of restarting.
		if s := server.Load(); s != nil && !te.IsRestart {
			service.draining.Store(true)
			_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) // nothing to do about a failure at a stop
			started := time.Now()
			service.log.Info("petstore stopping", "drain_delay_ms", logging.Milliseconds(cfg.DrainDelay))
			time.Sleep(cfg.DrainDelay)
			timeout := orDefault(cfg.ShutdownTimeout, options.DefaultShutdownTimeout)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				service.log.Warn("Requests still running at the end of the shutdown bound are cut off",
					"shutdownTimeout", timeout.String(), "error", err)
			}
			service.log.Info("petstore stopped serving", "drained_ms", logging.Milliseconds(time.Since(started)))
		}
		return te.Next()
	})
}

// guarded sets server's timeouts and handler as cfg says, for the public
// listener and a cluster follower's gate alike: the headers must arrive
// within --read-header-timeout, a body within --body-timeout of them
// (connlimit.BodyDeadline), and an idle connection closes after
// --idle-timeout. It returns server.
func guarded(server *http.Server, cfg options.Server, handler http.Handler) *http.Server {
	server.ReadHeaderTimeout = orDefault(cfg.ReadHeaderTimeout, options.DefaultReadHeaderTimeout)
	server.IdleTimeout = orDefault(cfg.IdleTimeout, options.DefaultIdleTimeout)
	server.Handler = connlimit.BodyDeadline(orDefault(cfg.BodyTimeout, options.DefaultBodyTimeout), handler)
	return server
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
