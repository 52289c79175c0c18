package staff

import (
	"context"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/cluster"
)

// ClusterView reads the cluster's nodes (cluster.Node.View); nil on a
// single server.
type ClusterView func(ctx context.Context) (cluster.View, error)

// clusterReadTimeout bounds the read of the nodes' registrations.
const clusterReadTimeout = 5 * time.Second

// clusterAnswer is the cluster's nodes; Cluster is null on a single server,
// which the page says plainly.
type clusterAnswer struct {
	Cluster *cluster.View `json:"cluster"`
}

// handleCluster answers every node of the cluster with its role, term, lag
// and replica state, and the leader; read-only.
func handleCluster(view ClusterView) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		if view == nil {
			return writeJSON(e, http.StatusOK, clusterAnswer{})
		}
		ctx, cancel := context.WithTimeout(e.Request.Context(), clusterReadTimeout)
		defer cancel()
		v, err := view(ctx)
		if err != nil {
			return router.NewApiError(http.StatusServiceUnavailable, "Cannot read the cluster's nodes from etcd now; retry shortly. The server log says why.", err)
		}
		return writeJSON(e, http.StatusOK, clusterAnswer{Cluster: &v})
	}
}
