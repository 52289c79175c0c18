package writegate_test

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/cron"

	"petstore/internal/audit"
	"petstore/internal/writegate"
	"petstore/testkit/apptest"
)

// A write begins only while the gate is open, and commits only if it is
// still open once done: one that the fence closed under is rolled back.
// The zero gate (a single server's) is always open.
func TestAWriteCommitsOnlyWhileTheGateIsOpen(t *testing.T) {
	s := apptest.Start(t, "")
	var open atomic.Bool
	gate := writegate.Fenced(open.Load)
	write := func(tx core.App) error {
		return audit.Write(tx, audit.Entry{Action: audit.ClusterPromoted, By: audit.System})
	}
	before := s.CountRecords(t, audit.Collection)

	ran := false
	if err := gate.Write(s.App, func(core.App) error { ran = true; return nil }); !errors.Is(err, writegate.ErrClosed) || ran {
		t.Errorf("a write through a closed gate: %v, ran %v", err, ran)
	}
	open.Store(true)
	err := gate.Write(s.App, func(tx core.App) error {
		if err := write(tx); err != nil {
			return err
		}
		open.Store(false) // the fence closes before the commit
		return nil
	})
	if !errors.Is(err, writegate.ErrClosed) {
		t.Errorf("a write the gate closed under: %v", err)
	}
	if n := s.CountRecords(t, audit.Collection); n != before {
		t.Errorf("%d records committed by a write the gate closed under", n-before)
	}
	open.Store(true)
	if err := gate.Write(s.App, write); err != nil {
		t.Fatal(err)
	}
	if err := (writegate.Gate{}).Write(s.App, write); err != nil {
		t.Fatal(err)
	}
	if n := s.CountRecords(t, audit.Collection); n != before+2 {
		t.Errorf("%d records committed by two writes through open gates, want 2", n-before)
	}
}

// Every scheduled job runs only while the gate is open, under its own id
// and schedule.
func TestScheduledJobsRunOnlyWhileTheGateIsOpen(t *testing.T) {
	c := cron.New()
	var runs atomic.Int64
	c.MustAdd("prune", "30 3 * * *", func() { runs.Add(1) })
	var open atomic.Bool
	writegate.Fenced(open.Load).Cron(c, slog.New(slog.DiscardHandler))
	jobs := c.Jobs()
	if len(jobs) != 1 || jobs[0].Id() != "prune" || jobs[0].Expression() != "30 3 * * *" {
		t.Fatalf("jobs %v", jobs)
	}
	jobs[0].Run()
	if n := runs.Load(); n != 0 {
		t.Errorf("the job ran %d times through a closed gate", n)
	}
	open.Store(true)
	jobs[0].Run()
	if n := runs.Load(); n != 1 {
		t.Errorf("the job ran %d times through an open gate, want 1", n)
	}
}
