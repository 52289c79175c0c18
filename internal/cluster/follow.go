package cluster

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"
)

// ErrStopped is serve's error when a cluster node was stopped before it
// served: a clean stop.
var ErrStopped = errors.New("stopped before serving")

// Follow tells systemd the node is started and waits, as WaitElected does,
// for the node to win the election. Under systemd's Type=notify a node is
// started once it listens with its gate, leader or not: a follower may
// follow for months. A follower stopped (SIGTERM, Ctrl-C) leaves the
// cluster at once, having nothing to drain: Follow then returns
// ErrStopped, and the caller closes the process, as after any error.
func (p *Process) Follow(log *slog.Logger) (int64, error) {
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Warn("Could not tell systemd that petstore is ready", "error", err)
	}
	stopped, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	term, err := p.WaitElected(stopped)
	if err != nil && stopped.Err() != nil {
		_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) // nothing to do about a failure at a stop
		log.Info("Cluster: stopped as a follower")
		return 0, ErrStopped
	}
	return term, err
}
