package clustergate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/api"
	"petstore/internal/audit"
	"petstore/internal/cluster"
	"petstore/internal/proxytrust"
	"petstore/internal/requestid"
)

// handoverTimeout bounds the handover: shipping the last transactions and
// resigning.
const handoverTimeout = 5 * time.Second

// Bind binds what p's node adds to the server once it leads: every request
// but the health checks handed to gate (New) whenever the fence is closed
// (reads as well as writes: the copy may be stale), and the handover on
// SIGTERM, at handoverPriority among the OnTerminate handlers (before the
// server's drain: writes stop at once). beforeShip writes, once the writes
// in flight have committed, what the service keeps in memory and must
// reach the next leader (the usage counted).
func Bind(se *core.ServeEvent, p *cluster.Process, gate http.Handler, handoverPriority int, beforeShip func() error, log *slog.Logger) {
	se.Router.Bind(peers(p.Node), api.Fence(p.Node.MayWrite, gate))
	se.App.OnTerminate().Bind(&hook.Handler[*core.TerminateEvent]{
		Id:       "petstoreClusterHandover",
		Priority: handoverPriority,
		Func: func(te *core.TerminateEvent) error {
			if te.IsRestart {
				return te.Next()
			}
			term := p.Node.Status().Term
			// Written while the node may still write, and shipped with the
			// last transactions.
			if err := writeAudit(te.App, audit.ClusterSteppedDown, p.Node.Name(), term, "handover"); err != nil {
				log.Error("Could not record the handover in the audit trail", "error", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), handoverTimeout)
			defer cancel()
			// An empty transaction waits for the one write connection:
			// every write that passed the fence has committed by then;
			// beforeShip then writes what the parts keep in memory.
			settle := func() error {
				if err := te.App.RunInTransaction(func(core.App) error { return nil }); err != nil {
					return err
				}
				return beforeShip()
			}
			if err := p.Handover(ctx, settle); err != nil {
				log.Error("Cluster: the handover failed; a follower takes over once the lease ends", "error", err)
			}
			return te.Next()
		},
	})
}

// peersID is the id of the middleware that checks forwarded requests.
const peersID = "petstoreClusterPeers"

// peers checks every request that names a forwarding node, before anything
// reads its client's address or request id (internal/proxytrust,
// internal/requestid): with the cluster's secret, one whose MAC does not
// verify (VerifyForward) is refused with 503 not_leader, and one that
// verifies is served as its forwarding node decided: its peer is the
// client's address, its id the forwarding node's, no header of the
// trusted proxy headers names another address, and the host and scheme it
// names (X-Forwarded-Host, -Proto, under the MAC) are believed. Without the secret
// (--cluster-insecure-peers) it changes nothing: the followers' headers
// count as any proxy's (--proxy-addresses).
func peers(node *cluster.Node) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       peersID,
		Priority: proxytrust.Priority - 1,
		Func: func(e *core.RequestEvent) error {
			f, named, err := VerifyForward(node, e.Request, time.Now())
			switch {
			case !named:
				return e.Next()
			case err != nil:
				node.RefusedForward(err)
				notLeader(e.Response, "This node does not take forwarded requests that do not prove a node of the cluster sent them; the server log says why.")
				return nil
			}
			f.asClient(e.Request)
			for _, h := range e.App.Settings().TrustedProxy.Headers {
				e.Request.Header.Del(h)
			}
			e.Request = proxytrust.Vouch(e.Request.WithContext(requestid.NewContext(e.Request.Context(), f.RequestID)))
			return e.Next()
		},
	}
}

// Acknowledge is the pets writer's acknowledgement of p's creates, once
// their transaction has committed (cluster.Process.Acknowledged): a create
// committed once the fence had closed gets 503 not_leader, never a 201;
// under --cluster-sync, one not shipped in time gets 503 not_shipped.
func Acknowledge(p *cluster.Process) func() error {
	return func() error {
		switch err := p.Acknowledged(); {
		case errors.Is(err, cluster.ErrNotLeading):
			return api.ErrNotLeader
		case err != nil:
			return api.ErrNotShipped
		}
		return nil
	}
}

// Promoted records that p's node serves as the leader of term: the fence
// opens, and the audit trail says so.
func Promoted(p *cluster.Process, app core.App, term int64, log *slog.Logger) {
	p.Serving()
	if err := writeAudit(app, audit.ClusterPromoted, p.Node.Name(), term, "elected"); err != nil {
		log.Error("Could not record the promotion in the audit trail", "error", err)
	}
	log.Info("Cluster: serving as the leader", "term", term)
}

func writeAudit(app core.App, action audit.Action, node string, term int64, reason string) error {
	return app.RunInTransaction(func(tx core.App) error {
		return audit.Write(tx, audit.Entry{Action: action, By: audit.System,
			Details: map[string]any{"term": term, "node": node, "reason": reason}})
	})
}

// Health is what /readyz says of p's node.
func Health(p *cluster.Process) func() api.ClusterHealth {
	return func() api.ClusterHealth {
		h := api.ClusterHealth{Term: p.Node.Status().Term, Leading: p.Node.MayWrite()}
		if status, ok := p.Data.Shipping(); ok {
			h.ReplicaErr = status.Err
		}
		return h
	}
}
