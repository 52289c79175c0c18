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

	"petstore/internal/logging"
)

// ServerConfig sets the HTTP server limits PocketBase leaves open-ended.
type ServerConfig struct {
	// ReadHeaderTimeout closes connections whose request headers have not all
	// arrived in time (slowloris). PocketBase's own is 1 minute.
	ReadHeaderTimeout time.Duration
	// BodyTimeout is how long a request's body may take to arrive after its
	// headers (connlimit.BodyDeadline).
	BodyTimeout time.Duration
	// ShutdownTimeout is how long SIGTERM lets in-flight requests finish.
	// PocketBase's own is 1 second.
	ShutdownTimeout time.Duration
	// DrainDelay is how long, after SIGTERM, the server keeps serving while
	// /readyz answers 503, so that a load balancer stops sending new
	// requests before the listener closes. Zero closes it at once.
	DrainDelay time.Duration
	// IdleTimeout closes a keep-alive connection that has waited this long
	// for its next request. PocketBase sets none, and Go then waits the
	// read timeout, 5 minutes.
	IdleTimeout time.Duration
	// MaxConnsPerAddress bounds the connections one client network (an
	// IPv4 address, an IPv6 /64) holds open on the public listener;
	// ProxyAddresses are not bound by it.
	MaxConnsPerAddress int
	// MaxConnsPerNetwork bounds the connections the clients of one wider
	// network (an IPv4 /24, an IPv6 /48) hold open together on the public
	// listener; 0: an eighth of MaxConns (connlimit.DefaultPerNetwork).
	// ProxyAddresses are not bound by it.
	MaxConnsPerNetwork int
	// MaxRealtimePerNetwork bounds the realtime streams (/api/realtime)
	// the clients of one wider network hold open together; 0:
	// realtime.DefaultPerNetwork.
	MaxRealtimePerNetwork int
	// TrustedProxyHeaders, when set, replaces PocketBase's trusted client
	// address headers (Settings, Application, User IP proxy headers) at
	// each start: comma-separated header names, X-Forwarded-For.
	TrustedProxyHeaders string
	// ProxyAddresses lists the reverse proxies' own addresses and networks,
	// comma-separated: every client's connection comes from them.
	ProxyAddresses string
	// MaxConns bounds the connections open on the public listener in all;
	// 0 derives it from the process's descriptor limit
	// (connlimit.DefaultGlobal).
	MaxConns int
}

// Defaults of ServerConfig.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout lets a body of 64 KiB (/v1's bound) arrive at 1 KiB
	// a second, and a dashboard's upload of megabytes at a slow link's pace.
	DefaultBodyTimeout     = time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultIdleTimeout outlasts the upstream idle timeouts of the usual
	// proxies and load balancers (nginx's keepalive_timeout and AWS ALB's,
	// 60 s), so that the proxy, not the server, closes an idle connection
	// and never sends a request on one the server is closing; and it is
	// short enough that an idle connection frees its descriptor within
	// about a minute.
	DefaultIdleTimeout = 75 * time.Second
)

const (
	serverHookId   = "petstoreServer"
	listenerHookId = "petstoreListener"
	// listenerHookPriority runs the listener's wrapping after every other
	// OnServe handler, whichever of them set the listener.
	listenerHookPriority = 10000
	shutdownHookId       = "petstoreGracefulShutdown"
	shutdownHookPriority = -10000 // before PocketBase's pbGracefulShutdown (-9999)
)

// bindServer applies cfg to the server when it starts, bounds the
// connections of its listener with service.conns, and on termination
// drains it: draining turns true (/readyz answers 503), the server keeps
// serving for cfg.DrainDelay, then the listener closes (new connections are
// refused) and requests in flight get cfg.ShutdownTimeout to finish. PocketBase's own
// shutdown then finds nothing left to cut off after its 1 second, and the
// hooks after it (rate-limit flush, log writer, database close) run once no
// request is being served.
func bindServer(app core.App, cfg ServerConfig, https bool, service *Service) {
	var server atomic.Pointer[http.Server]
	app.OnServe().Bind(&hook.Handler[*core.ServeEvent]{
		Id: serverHookId,
		Func: func(se *core.ServeEvent) error {
			se.Server.ReadHeaderTimeout = orDefault(cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
			se.Server.IdleTimeout = orDefault(cfg.IdleTimeout, DefaultIdleTimeout)
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
				_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) // nothing to do about a failure at a stop
				started := time.Now()
				service.log.Info("petstore stopping", "drain_delay_ms", logging.Milliseconds(cfg.DrainDelay))
				time.Sleep(cfg.DrainDelay)
				timeout := orDefault(cfg.ShutdownTimeout, DefaultShutdownTimeout)
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				if err := s.Shutdown(ctx); err != nil {
					service.log.Warn("Requests still running at the end of the shutdown bound are cut off",
						"shutdownTimeout", timeout.String(), "error", err)
				}
				service.log.Info("petstore stopped serving", "drained_ms", logging.Milliseconds(time.Since(started)))
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
