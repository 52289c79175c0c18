package api

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/limits"
)

// CodeNotReady is /readyz's Error code. It is not in the /v1 catalogue:
// no /v1 operation answers it.
const CodeNotReady = "not_ready"

// readyTimeout bounds /readyz's read of the database: a database that takes
// longer is not ready.
const readyTimeout = 2 * time.Second

// Health is what /healthz and /readyz look at.
type Health struct {
	Draining func() bool // true from SIGTERM on
	DB       *sql.DB     // the read pool
	Limiter  *limits.Limiter
	// Cluster is the node's state in cluster mode; nil otherwise.
	Cluster func() ClusterHealth
}

// ClusterHealth is what /readyz says of a cluster node that serves.
type ClusterHealth struct {
	Term       int64
	Leading    bool  // the node leads, and may write
	ReplicaErr error // why the replica's storage cannot be reached; nil when it can
}

// AddHealthRoutes serves /healthz (the process answers) and /readyz (it can
// serve /v1) for load balancers and supervisors. They are outside /v1: no
// key, no rate limit, no request log.
func AddHealthRoutes(r *router.Router[*core.RequestEvent], h Health) {
	r.GET("/healthz", handleHealthz).Unbind(apis.DefaultActivityLoggerMiddlewareId)
	r.GET("/readyz", h.handleReadyz).Unbind(apis.DefaultActivityLoggerMiddlewareId)
}

func handleHealthz(e *core.RequestEvent) error {
	return writeJSON(e.Response, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness is /readyz's 200 body.
type readiness struct {
	Status      string `json:"status"`      // "ready"
	Database    string `json:"database"`    // "ok"
	RateLimiter string `json:"rateLimiter"` // "memory", "redis", or "local" while Redis fails
	// In cluster mode: the node's role ("leader"), its term, and whether
	// its data ships to the replica ("ok", or "unreachable": the leader
	// serves on, and a failover loses what was not shipped).
	Role    string `json:"role,omitempty"`
	Term    int64  `json:"term,omitempty"`
	Replica string `json:"replica,omitempty"`
}

func (h Health) handleReadyz(e *core.RequestEvent) error {
	if h.Draining() {
		writeError(e.Response, newError(http.StatusServiceUnavailable, CodeNotReady,
			"The service is shutting down; requests in flight are finishing."))
		return nil
	}
	ctx, cancel := context.WithTimeout(e.Request.Context(), readyTimeout)
	defer cancel()
	var one int
	if err := h.DB.QueryRowContext(ctx, "SELECT 1 FROM _migrations LIMIT 1").Scan(&one); err != nil {
		e.App.Logger().Error("Readiness check could not read the database", "error", err)
		writeError(e.Response, newError(http.StatusServiceUnavailable, CodeNotReady,
			"The database cannot be read; the server log says why."))
		return nil
	}
	// A Redis outage leaves the service ready: the limiter counts locally.
	body := readiness{Status: "ready", Database: "ok", RateLimiter: h.Limiter.Counting()}
	if h.Cluster != nil {
		c := h.Cluster()
		if !c.Leading {
			writeError(e.Response, newError(http.StatusServiceUnavailable, CodeNotReady,
				"This node no longer leads the cluster (term %d); it restarts as a follower.", c.Term))
			return nil
		}
		body.Role, body.Term, body.Replica = "leader", c.Term, "ok"
		if c.ReplicaErr != nil {
			body.Replica = "unreachable"
		}
	}
	return writeJSON(e.Response, http.StatusOK, body)
}
