package replica_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/database"
	"petstore/internal/replica"
	"petstore/testkit/apptest"
)

// BenchmarkCreatePetServerCPU measures what shipping costs a leader:
// createPet from wrk (a process of its own, 8 connections, 5 s) against the
// real app in this process, alone ("single") and with a Replicator shipping
// to a file replica ("replicated"). It reports the process's CPU time per
// create, which is the server's, and creates a second. Each run is one
// measurement (-benchtime 1x); take medians over -count:
//
//	go test -run '^$' -bench CreatePetServerCPU -benchtime 1x -count 3 ./internal/replica/
func BenchmarkCreatePetServerCPU(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not on PATH (apt-get install wrk)")
	}
	for _, replicated := range []bool{false, true} {
		name := map[bool]string{false: "single", true: "replicated"}[replicated]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				creates, cpu := measureCreates(b, wrk, replicated)
				b.ReportMetric(float64(cpu.Microseconds())/float64(creates), "cpu-µs/create")
				b.ReportMetric(float64(creates)/5, "creates/s")
			}
		})
	}
}

var wrkRequests = regexp.MustCompile(`(\d+) requests in`)

// measureCreates runs wrk's creates for 5 s and returns how many were made
// and the CPU time the process spent meanwhile.
func measureCreates(b *testing.B, wrk string, replicated bool) (int, time.Duration) {
	b.StopTimer()
	s := apptest.Start(b, "")
	key := s.NewKey(b, apikeys.NewKey{Plan: "enterprise", PerMinute: 1 << 30, PerDay: 1 << 30})
	if replicated {
		root, err := replica.ParseURL("file://" + b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		r, err := replica.StartReplicating(b.Context(), filepath.Join(s.Dir, database.DataFile), root, "petstore", 1, log)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			s.Stop(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Close(ctx); err != nil {
				b.Error(err)
			}
		})
	}
	script := filepath.Join(b.TempDir(), "create.lua")
	lua := fmt.Sprintf(`wrk.method = "POST"
wrk.body = '{"name":"Rex","categoryId":1,"status":"available"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
`, key)
	if err := os.WriteFile(script, []byte(lua), 0o600); err != nil {
		b.Fatal(err)
	}
	before := cpuTime(b)
	b.StartTimer()
	out, err := exec.Command(wrk, "-t2", "-c8", "-d5s", "-s", script, s.URL+"/v1/pets").CombinedOutput()
	b.StopTimer()
	cpu := cpuTime(b) - before
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	m := wrkRequests.FindSubmatch(out)
	if m == nil || regexp.MustCompile(`Non-2xx|Socket errors`).Match(out) {
		b.Fatalf("wrk:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n, cpu
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
