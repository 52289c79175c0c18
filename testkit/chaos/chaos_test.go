package chaos_test

import (
	"os"
	"testing"
	"time"

	"petstore/testkit/chaos"
	"petstore/testkit/etcdtest"
	"petstore/testkit/realserver"
)

// runTime is each run's time of faults: two runs, with the cluster's start
// and the final checks, fit CI's few minutes on two cores.
const runTime = 100 * time.Second

// TestJepsen runs the harness twice, with a fixed seed and with a random
// one (logged, for a replay with tools/chaos -seed), and fails on any
// check: an acknowledged create lost outside the documented window, a
// duplicate, two writers, a history Porcupine does not find linearizable,
// a fault never followed by a 201.
func TestJepsen(t *testing.T) {
	etcdtest.Require(t) // skipped under -short; etcd required in CI
	bin, err := realserver.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		seed int64
	}{
		{"fixed seed", 1},
		{"random seed", time.Now().UnixNano() % 1_000_000},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Logf("seed %d (replay: go run ./tools/chaos -duration %s -seed %d)", run.seed, runTime, run.seed)
			dir, err := os.MkdirTemp("", "chaos-")
			if err != nil {
				t.Fatal(err)
			}
			r, err := chaos.Run(chaos.Config{Bin: bin, Dir: dir, Duration: runTime, Seed: run.seed, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + r.Table())
			if !r.OK() {
				t.Errorf("seed %d failed; its data and logs stay in %s", run.seed, dir)
				return
			}
			os.RemoveAll(dir)
		})
	}
}
