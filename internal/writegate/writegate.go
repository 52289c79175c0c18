// Package writegate is the one rule of the service's background writers,
// the parts that write to data.db without a request (the usage recorder,
// the threshold writer, the keys' last-use writer, the webhooks' deliverer and the events written
// beside a request, the scheduled jobs): each writes only while its node
// may write. A cluster node may write while its fence is open
// (internal/cluster, Node.MayWrite): not before it serves, and never once
// the fence has closed, whatever the part has in memory, so that a deposed
// leader's database holds nothing its term's replica lacks and sends no
// webhook the next leader sends again. A single server always may.
//
// The one write past a closed gate is the handover's: a leader handing over
// closes its fence, then writes the usage counted in memory before its last
// shipment (clustergate.Bind's beforeShip), so that the next leader has it.
package writegate

import (
	"errors"
	"log/slog"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/cron"
)

// ErrClosed is the error of a write the gate stopped.
var ErrClosed = errors.New("this node may not write now: it is a cluster node whose fence is closed")

// Gate says whether this node may write now. The zero Gate is a single
// server's: always open.
type Gate struct {
	mayWrite func() bool
}

// Fenced is the gate of a node that may write while mayWrite says so (a
// cluster node's fence, cluster.Node.MayWrite); nil: always.
func Fenced(mayWrite func() bool) Gate { return Gate{mayWrite: mayWrite} }

// Open says whether this node may write now.
func (g Gate) Open() bool { return g.mayWrite == nil || g.mayWrite() }

// Write runs fn in a transaction of app, which begins only while the gate is
// open and commits only if it is still open once fn is done: a write that
// waited for the write connection while the fence closed is rolled back.
// It returns ErrClosed when the gate stopped it.
func (g Gate) Write(app core.App, fn func(tx core.App) error) error {
	if !g.Open() {
		return ErrClosed
	}
	return app.RunInTransaction(func(tx core.App) error {
		if err := fn(tx); err != nil {
			return err
		}
		if !g.Open() {
			return ErrClosed
		}
		return nil
	})
}

// Cron makes every job of c run only while the gate is open: the
// scheduled prunes and purges, PocketBase's own jobs included. It applies
// to the jobs c has when it is called (the service calls it once every
// part has registered its jobs); a job skipped is logged to log.
func (g Gate) Cron(c *cron.Cron, log *slog.Logger) {
	if g.mayWrite == nil {
		return
	}
	for _, job := range c.Jobs() {
		id := job.Id()
		c.MustAdd(id, job.Expression(), func() {
			if !g.Open() {
				log.Warn("A scheduled job did not run: this node may not write", "job", id)
				return
			}
			job.Run()
		})
	}
}
