package api

import (
	"errors"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// ErrNotLeader is the error of a write that a cluster node's fence refused
// at its commit, or whose commit ended after the fence closed (Fence
// refuses most before they start).
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

// FenceID is the id of Fence's middleware.
const FenceID = "petstoreFence"

// Fence hands every request but /healthz and /readyz to elsewhere while
// mayServe says no: a cluster node whose lease is not provably held neither
// writes nor answers from its copy, which a newer leader may have passed
// (a leader paused past its lease resumes with the requests that queued
// meanwhile). elsewhere is the node's gate: it forwards the request to the
// leader it knows, or answers 503 not_leader with Retry-After: 1. The
// health routes answer for the node itself (/readyz: 503 not_ready).
func Fence(mayServe func() bool, elsewhere http.Handler) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       FenceID,
		Priority: fencePriority,
		Func: func(e *core.RequestEvent) error {
			if mayServe() {
				return e.Next()
			}
			switch e.Request.URL.Path {
			case "/healthz", "/readyz":
				return e.Next()
			}
			elsewhere.ServeHTTP(e.Response, e.Request)
			return nil
		},
	}
}
