package api

import (
	"errors"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// ErrNotLeader is the error of a write that a cluster node's fence refused
// at its commit (RefuseWrites refuses most before they start).
var ErrNotLeader = &Error{Code: CodeNotLeader, Status: http.StatusServiceUnavailable,
	Message: "This node no longer leads the cluster; retry, and the new leader answers."}

// ErrNotShipped is the error of a create that a cluster leader under
// --cluster-sync committed but could not ship to the replica in time: a
// failover may lose it, so it is not acknowledged.
var ErrNotShipped = &Error{Code: CodeNotShipped, Status: http.StatusServiceUnavailable,
	Message: "The create is stored on the leader but not yet copied to the cluster's replica, so it is not acknowledged; retry with the same Idempotency-Key, which answers it once copied (or creates it once, had a failover lost it)."}

// writeFailed is the answer to a create the pets writer did not commit or
// acknowledge: a refusal of the fence, or a create not shipped, says when
// to retry.
func writeFailed(e *core.RequestEvent, err error) error {
	if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNotShipped) {
		e.Response.Header().Set("Retry-After", "1")
	}
	return err
}

// RefuseWritesID is the id of RefuseWrites' middleware.
const RefuseWritesID = "petstoreRefuseWrites"

// RefuseWrites answers every request that may write (any method but GET,
// HEAD and OPTIONS: /v1's creates, the staff page's and the dashboard's
// changes) with 503 not_leader and Retry-After: 1 while mayWrite says no: a
// cluster node whose lease is not provably held commits no client's write.
// The client retries, and reaches the new leader.
func RefuseWrites(mayWrite func() bool) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       RefuseWritesID,
		Priority: refuseWritesPriority,
		Func: func(e *core.RequestEvent) error {
			switch e.Request.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
				return e.Next()
			}
			if mayWrite() {
				return e.Next()
			}
			e.Response.Header().Set("Retry-After", "1")
			writeError(e.Response, ErrNotLeader)
			return nil
		},
	}
}
