package cluster

import (
	"log/slog"
	"time"
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
