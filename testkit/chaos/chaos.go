// Package chaos is a Jepsen-style test of petstore's cluster mode: three
// etcd members and three nodes of the built binary on loopback, every node
// reaching etcd and its peers through TCP proxies the harness owns; clients
// that create, read and page across all nodes, recording a history; a
// nemesis that kills, pauses, partitions and lies to the cluster on a
// seeded schedule; and checks of the history at the end (lost and
// duplicated creates, two writers, Porcupine's linearizability of reads
// after acknowledged creates, the time from each fault to the next 201).
// TestJepsen runs it for a bounded time; tools/chaos runs it longer.
package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Config is one run.
type Config struct {
	Bin      string        // the petstore binary (realserver.Build)
	Dir      string        // the run's data: etcd's, the nodes' and the replica's
	Duration time.Duration // how long the nemesis makes faults
	Seed     int64         // the nemesis's schedule and the clients' choices
	Sync     bool          // the nodes run with --cluster-sync
	TTL      time.Duration // --cluster-ttl
	Logf     func(format string, args ...any)
}

// DefaultTTL is the nodes' lease in a run: short, for failovers that fit a
// bounded test, and long enough that the renewals of a loaded two-core
// machine keep it (the cluster's tests use 2 s for a pause, 5 s by default).
const DefaultTTL = 3 * time.Second

// Result is what a run measured and every check it failed.
type Result struct {
	Seed     int64
	Sync     bool
	TTL      time.Duration
	Duration time.Duration

	Acknowledged, Attempts int // creates answered 201; requests sent for creates
	Reads, Pages           int // getPet answered 200 or 404; pages answered 200
	Answers                string

	LostInWindow  int             // acknowledged creates lost within a hard loss's window
	WindowOffsets []time.Duration // for each: how long before the fault it was acknowledged
	LostOutside   int
	Duplicates    int
	TwoWriters    []string
	Porcupine     porcupine.CheckResult
	StaleReads    []string
	Faults        []Figure

	Problems []string // each check failed, as a sentence naming what was seen
}

// Figure is, for a kind of fault, the time from a fault to the next 201
// and the longest time without a 201 that followed it (medians are the
// lower of the middle two).
type Figure struct {
	Kind                Kind
	Count               int
	Median, Worst       time.Duration // to the next 201
	GapMedian, GapWorst time.Duration // the longest time without a 201 (longestGap)
	Unrecovered         int           // faults never followed by a 201
}

func (r *Result) fail(format string, args ...any) {
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// OK says whether every check passed.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// Run starts the cluster, runs the clients and the nemesis for
// cfg.Duration, heals every fault, lets the cluster serve again, and
// checks the history. Its error is the harness's (the cluster did not
// start); the checks' failures are in the Result's Problems.
func Run(cfg Config) (*Result, error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	start := time.Now()
	var c *cluster
	var err error
	// A port found free may be taken before a node binds it (another
	// test's server may even answer on it): the cluster starts again, on
	// other ports, in a directory of its own.
	for try := range 3 {
		if c, err = startCluster(cfg, filepath.Join(cfg.Dir, fmt.Sprintf("try%d", try))); err == nil {
			break
		}
		cfg.Logf("the cluster did not start: %v", err)
	}
	if err != nil {
		return nil, err
	}
	defer c.stop()
	cfg.Logf("cluster up in %s; faults for %s (seed %d, TTL %s, sync %t)", time.Since(start).Round(time.Millisecond), cfg.Duration, cfg.Seed, cfg.TTL, cfg.Sync)

	h := &history{answers: map[string]int{}}
	w := startWorkload(c, h, uint64(cfg.Seed))
	nm := newNemesis(c, h, cfg)
	nerr := nm.run(time.Now().Add(cfg.Duration))
	healed := time.Now()
	if err := nm.healAll(); err != nil && nerr == nil {
		nerr = err
	}
	// The cluster serves again: a 201 after every fault healed, then a
	// few seconds of history more.
	served := waitFor(60*time.Second, func() bool { _, ok := h.firstAckAfter(healed); return ok })
	time.Sleep(3 * time.Second)
	var leader *node
	waitFor(30*time.Second, func() bool {
		for _, n := range c.nodes {
			if n.Leads() {
				leader = n
				return true
			}
		}
		return false
	})
	w.halt()

	r := &Result{Seed: cfg.Seed, Sync: cfg.Sync, TTL: cfg.TTL, Duration: cfg.Duration, Answers: h.describe()}
	if nerr != nil {
		r.fail("NEMESIS: %v", nerr)
	}
	if !served {
		r.fail("UNAVAILABLE: no 201 within 60 s of every fault healed (%s)", stamp(healed))
	}
	if leader == nil {
		r.fail("UNAVAILABLE: no node leads 30 s after every fault healed")
		r.dumpLogs(c, cfg.Dir)
		return r, nil
	}
	final, err := readAll(w, leader)
	if err != nil {
		r.fail("FINAL READ: %v", err)
		r.dumpLogs(c, cfg.Dir)
		return r, nil
	}
	check(r, h, nm.faults, final, cfg.Sync)
	if !r.OK() {
		r.dumpLogs(c, cfg.Dir)
	}
	return r, nil
}

// dumpLogs writes each node's output into the run's directory, and names
// the files among the problems, for the one who replays the seed.
func (r *Result) dumpLogs(c *cluster, dir string) {
	var paths []string
	for _, n := range c.nodes {
		path := filepath.Join(dir, n.Name+".log")
		if os.WriteFile(path, []byte(n.Output()), 0o600) == nil {
			paths = append(paths, path)
		}
	}
	r.Problems = append(r.Problems, "the nodes' logs: "+strings.Join(paths, " "))
}

// figures sums the faults up by kind, in Kinds' order.
func figures(faults []*fault) []Figure {
	var out []Figure
	for _, k := range Kinds {
		fig := Figure{Kind: k}
		var times, gaps []time.Duration
		for _, f := range faults {
			if f.kind != k {
				continue
			}
			fig.Count++
			if f.firstAck < 0 {
				fig.Unrecovered++
				continue
			}
			times, gaps = append(times, f.firstAck), append(gaps, f.gap)
		}
		if fig.Count == 0 {
			continue
		}
		if len(times) > 0 {
			slices.Sort(times)
			slices.Sort(gaps)
			fig.Median, fig.Worst = times[(len(times)-1)/2], times[len(times)-1]
			fig.GapMedian, fig.GapWorst = gaps[(len(gaps)-1)/2], gaps[len(gaps)-1]
		}
		out = append(out, fig)
	}
	return out
}

// Table is the run's figures as a text table.
func (r *Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, --cluster-sync %t, TTL %s, faults for %s\n", r.Seed, r.Sync, r.TTL, r.Duration)
	fmt.Fprintf(&b, "creates acknowledged           %d (of %d requests)\n", r.Acknowledged, r.Attempts)
	fmt.Fprintf(&b, "reads, pages                   %d, %d\n", r.Reads, r.Pages)
	window := ""
	if len(r.WindowOffsets) > 0 {
		window = fmt.Sprintf(" (%s to %s before the fault)", slices.Min(r.WindowOffsets).Round(time.Millisecond), slices.Max(r.WindowOffsets).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "lost inside the window         %d%s\n", r.LostInWindow, window)
	fmt.Fprintf(&b, "lost outside the window        %d\n", r.LostOutside)
	fmt.Fprintf(&b, "Idempotency-Keys created twice %d\n", r.Duplicates)
	fmt.Fprintf(&b, "two-writer windows             %d\n", len(r.TwoWriters))
	fmt.Fprintf(&b, "Porcupine                      %s (%d stale reads)\n", r.Porcupine, len(r.StaleReads))
	fmt.Fprintf(&b, "other answers                  %s\n", r.Answers)
	fmt.Fprintf(&b, "\n%-40s %5s %17s %17s %8s\n", "fault", "count", "next 201 med/max", "no 201 med/max", "no 201")
	round := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "%-40s %5d %17s %17s %8d\n", f.Kind, f.Count, round(f.Median)+" / "+round(f.Worst),
			round(f.GapMedian)+" / "+round(f.GapWorst), f.Unrecovered)
	}
	b.WriteString("(seconds; next 201: from the fault to the first 201 of a request sent after it; no 201: the longest time without a 201 from the fault until the next fault, at most 10 s after its heal)\n")
	if !r.OK() {
		b.WriteString("\nFAILED:\n")
		for _, p := range r.Problems {
			b.WriteString("  " + p + "\n")
		}
	}
	return b.String()
}
