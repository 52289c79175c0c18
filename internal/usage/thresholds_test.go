package usage_test

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/usage"
	"petstore/internal/writegate"
	"petstore/testkit/apptest"
)

// told collects the crossings a Thresholds told of, as "plan percent".
type told struct {
	mu  sync.Mutex
	got []string
}

func (c *told) counted(plan string, percent int64) {
	c.mu.Lock()
	c.got = append(c.got, fmt.Sprintf("%s %d", plan, percent))
	c.mu.Unlock()
}

// Each threshold is crossed at ceil(its percentage of the limit) and told
// of once: again on the same instance, by a second one on the same data
// directory, or past it, nothing. A limit under 5 crosses both at one
// count; below 80 %, or without a day limit, nothing is told.
func TestThresholdsAtTheirCountOnce(t *testing.T) {
	s := apptest.Start(t, "")
	five, three, none := keyID(t, s), keyID(t, s), keyID(t, s)
	at := time.Now()
	resets := at.Add(time.Hour)
	var first, second told
	a := usage.StartThresholds(s.App, slog.New(slog.DiscardHandler), first.counted, writegate.Gate{})
	for used := int64(1); used <= 5; used++ {
		a.Observe(five, "", "pro", 5, used, resets, at)
		a.Observe(five, "", "pro", 5, used, resets, at) // the same count twice: told once
		a.Observe(none, "", "pro", 0, used, resets, at)
	}
	if err := a.Close(); err != nil { // waits for its writes
		t.Fatal(err)
	}
	if !slices.Equal(first.got, []string{"pro 80", "pro 100"}) {
		t.Fatalf("told %v at 4 and 5 of 5, want pro 80, pro 100", first.got)
	}
	// A restart, and a second instance: past both, nothing more.
	restarted := usage.StartThresholds(s.App, slog.New(slog.DiscardHandler), first.counted, writegate.Gate{})
	other := usage.StartThresholds(s.App, slog.New(slog.DiscardHandler), second.counted, writegate.Gate{})
	for used := int64(1); used <= 7; used++ {
		restarted.Observe(five, "", "pro", 5, used, resets, at)
		other.Observe(five, "", "pro", 5, used, resets, at)
	}
	other.Observe(three, "", "free", 3, 2, resets, at) // 67 %
	other.Observe(three, "", "free", 3, 3, resets, at) // ceil(2.4) = 3: both
	for _, th := range []*usage.Thresholds{restarted, other} {
		if err := th.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(first.got, []string{"pro 80", "pro 100"}) || !slices.Equal(second.got, []string{"free 80", "free 100"}) {
		t.Errorf("told %v by the first, %v by the second; want pro 80, pro 100, and free 80, free 100", first.got, second.got)
	}
	if n := s.CountRecords(t, usage.ThresholdsCollection); n != 4 {
		t.Errorf("%d thresholds recorded, want 4", n)
	}
}

// BenchmarkThresholdsObserve is what every key's request pays: below 80 %,
// one comparison; past it, with the crossings told of, a look in memory.
func BenchmarkThresholdsObserve(b *testing.B) {
	s := apptest.Start(b, "")
	id := keyID(b, s)
	th := usage.StartThresholds(s.App, slog.New(slog.DiscardHandler), nil, writegate.Gate{})
	b.Cleanup(func() { _ = th.Close() })
	at := time.Now()
	b.Run("below", func(b *testing.B) {
		for b.Loop() {
			th.Observe(id, "", "pro", 1000, 500, at, at)
		}
	})
	th.Observe(id, "", "pro", 1000, 1000, at, at)
	b.Run("past", func(b *testing.B) {
		for b.Loop() {
			th.Observe(id, "", "pro", 1000, 1000, at, at)
		}
	})
}

// A node that may not write (a cluster node that no longer leads) records
// no crossing; once it may, the key's next request past the threshold does.
func TestThresholdsWriteNothingWhileTheNodeMayNotWrite(t *testing.T) {
	s := apptest.Start(t, "")
	id := keyID(t, s)
	var leads atomic.Bool
	var asked atomic.Int64
	var got told
	th := usage.StartThresholds(s.App, slog.New(slog.DiscardHandler), got.counted, writegate.Fenced(func() bool {
		asked.Add(1)
		return leads.Load()
	}))
	at := time.Now()
	th.Observe(id, "", "pro", 10, 8, at, at)
	for deadline := time.Now().Add(5 * time.Second); asked.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the crossing was never taken from the queue")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := s.CountRecords(t, usage.ThresholdsCollection); n != 0 {
		t.Fatalf("%d thresholds recorded by a node that may not write", n)
	}
	leads.Store(true)
	for deadline := time.Now().Add(5 * time.Second); s.CountRecords(t, usage.ThresholdsCollection) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the crossing was never recorded once the node may write")
		}
		th.Observe(id, "", "pro", 10, 9, at, at)
		time.Sleep(20 * time.Millisecond)
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.got, []string{"pro 80"}) {
		t.Errorf("told %v, want pro 80", got.got)
	}
}
