package requestlog

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"
)

// BenchmarkWrite writes listPets' log entries in batches of several sizes
// into a log that already holds 100,000 rows, and reports the process's CPU
// time per entry (less noisy than wall time on a shared machine).
func BenchmarkWrite(b *testing.B) {
	app := newTestApp(b)
	app.Settings().Logs = core.LogsConfig{MaxDays: 5, LogIP: true} // PocketBase's defaults
	l := startLogger(b, app, All)

	entries := make([]entry, batchSize)
	for i := range entries {
		entries[i] = listPetsEntry(b, app)
	}
	for range 100_000 / batchSize {
		l.write(entries)
	}

	for _, size := range []int{1, 16, 128, batchSize} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			cpu := processCPU(b)
			for b.Loop() {
				l.write(entries[:size])
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N*size), "cpu-ns/entry")
			b.ReportMetric(float64(b.Elapsed())/float64(b.N*size), "ns/entry")
		})
	}
}

// BenchmarkRequestEntry builds listPets' entry, as the middleware does for
// every request.
func BenchmarkRequestEntry(b *testing.B) {
	app := newTestApp(b)
	app.Settings().Logs = core.LogsConfig{MaxDays: 5, LogIP: true}
	e := listPetsEvent(app)
	started := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		requestEntry(e, nil, started)
	}
}

// listPetsEntry is the entry the middleware queues for a successful listPets.
func listPetsEntry(tb testing.TB, app core.App) entry {
	en, ok := requestEntry(listPetsEvent(app), nil, time.Now().Add(-80*time.Microsecond))
	if !ok {
		tb.Fatal("the settings log nothing")
	}
	return en
}

func listPetsEvent(app core.App) *core.RequestEvent {
	req := httptest.NewRequest(http.MethodGet, "/v1/pets?limit=20", nil)
	req.Header.Set("User-Agent", "wrk")
	e := &core.RequestEvent{App: app, Event: router.Event{Request: req, Response: httptest.NewRecorder()}}
	e.Response.WriteHeader(http.StatusOK)
	return e
}

func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
