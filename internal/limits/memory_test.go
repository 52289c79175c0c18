package limits_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"petstore/internal/limits"
)

// emptyLedger has no bans and nothing served: what this file measures is
// the limiter's own memory.
type emptyLedger struct{}

func (emptyLedger) SaveBan(string, time.Time) error            { return nil }
func (emptyLedger) Served(time.Time) (map[string]int64, error) { return nil, nil }

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Memory per caller stays small and bounded: 100,000 distinct API keys and
// 100,000 distinct client networks, each counted once, through the
// in-memory limiter. Run with -v for the figures quoted in docs/rate-limits.md.
func TestMemoryPerCaller(t *testing.T) {
	const callers = 100_000
	ctx := context.Background()
	l, err := limits.New(limits.Config{}, emptyLedger{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	quota := limits.Quota{PerMinute: 1000, PerDay: 100_000, BanFor: 15 * time.Minute}

	// Names are made before measuring: the limiter's memory is what is left.
	keys, ips := make([]string, callers), make([]string, callers)
	for i := range callers {
		keys[i] = fmt.Sprintf("%015d", i)
		ips[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}

	before := heapInUse()
	for i, ip := range ips {
		if _, err := l.TakeAnonymous(ctx, ip); err != nil {
			t.Fatalf("IP %d: %v", i, err)
		}
	}
	afterIPs := heapInUse()
	for i, id := range keys {
		if _, err := l.TakeKey(ctx, limits.Key{ID: id, Quota: quota}); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	afterKeys := heapInUse()

	perIP := float64(afterIPs-before) / callers
	perKey := float64(afterKeys-afterIPs) / callers
	t.Logf("heap: %.1f MB before, +%.1f MB for %d networks (%.0f B each), +%.1f MB for %d keys (%.0f B each: the counts of both windows and of rejections)",
		float64(before)/(1<<20), float64(afterIPs-before)/(1<<20), callers, perIP, float64(afterKeys-afterIPs)/(1<<20), callers, perKey)

	// The bounds leave room for map growth; a leak per request (a counter
	// per request rather than per caller) would be far above them.
	if perIP > 512 {
		t.Errorf("%.0f bytes per client IP, want at most 512", perIP)
	}
	if perKey > 1024 {
		t.Errorf("%.0f bytes per API key, want at most 1024", perKey)
	}

	// A caller counted again costs nothing more.
	for i, id := range keys {
		if _, err := l.TakeKey(ctx, limits.Key{ID: id, Quota: quota}); err != nil {
			t.Fatalf("key %d again: %v", i, err)
		}
	}
	again := heapInUse()
	if grown := float64(again) - float64(afterKeys); grown > 0.1*float64(afterKeys-before) {
		t.Errorf("counting the same 100,000 keys again grew the heap by %.1f MB", grown/(1<<20))
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(ips)
}
