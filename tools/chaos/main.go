// Command chaos runs the Jepsen-style test of testkit/chaos for longer than
// CI does: three etcd members and three nodes of the binary built from
// this checkout, clients, and a nemesis of faults for -duration, then the
// checks; it prints the figures as a table and exits 1 when a check fails
// (the run's data and the nodes' logs then stay in the directory it names).
//
//	go run ./tools/chaos [-duration 10m] [-seed N] [-sync] [-ttl 3s]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"petstore/testkit/chaos"
	"petstore/testkit/realserver"
)

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "how long the nemesis makes faults")
	seed := flag.Int64("seed", time.Now().UnixNano()%1_000_000, "the schedule's seed (a failure names it, for a replay)")
	sync := flag.Bool("sync", false, "run the nodes with --cluster-sync")
	ttl := flag.Duration("ttl", chaos.DefaultTTL, "the nodes' --cluster-ttl")
	flag.Parse()
	ok, err := run(*duration, *seed, *sync, *ttl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(duration time.Duration, seed int64, sync bool, ttl time.Duration) (bool, error) {
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		return false, err
	}
	bin, err := realserver.Build(dir)
	if err != nil {
		return false, err
	}
	logger := log.New(os.Stderr, "", log.Ltime)
	logger.Printf("seed %d; the run's data in %s", seed, dir)
	r, err := chaos.Run(chaos.Config{Bin: bin, Dir: dir, Duration: duration, Seed: seed, Sync: sync, TTL: ttl, Logf: logger.Printf})
	if err != nil {
		return false, err
	}
	fmt.Print(r.Table())
	if r.OK() {
		os.RemoveAll(dir)
	}
	return r.OK(), nil
}
