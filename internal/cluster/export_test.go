package cluster

import (
	"log/slog"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// LeadingOnAFakeClock is a process whose node leads lease 1, granted for
// cfg.TTL at 0 on a fake clock, with no etcd and no replica; advance moves
// the clock on.
func LeadingOnAFakeClock(cfg Config) (p *Process, advance func(time.Duration)) {
	clk := &fakeClock{}
	n := &Node{cfg: cfg, log: slog.New(slog.DiscardHandler)}
	n.fence.now = clk.now
	n.fence.newLease(1, 0, cfg.TTL)
	n.fence.lead(1)
	return &Process{Node: n, Data: &Data{}, log: n.log}, clk.advance
}

// LeaderValue is the record n puts under its election key for term.
func (n *Node) LeaderValue(term int64) string { return n.leaderValue(term) }

// ReadLeader reads an election key holding value, created at revision
// term, as n's observer does.
func (n *Node) ReadLeader(value string, term int64) (LeaderInfo, error) {
	return n.readLeader(&mvccpb.KeyValue{Value: []byte(value), CreateRevision: term})
}

// SetPromoteTimeout bounds the promotions of the test's processes.
func SetPromoteTimeout(d time.Duration) { promoteTimeout = d }
