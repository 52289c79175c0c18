package usage_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/usage"
	"petstore/internal/writegate"
	"petstore/testkit/apptest"
)

func keyID(t testing.TB, s *apptest.Server) string {
	t.Helper()
	_, r, err := apikeys.Create(s.App, apikeys.NewKey{Plan: "free", Name: "shop"}, audit.CLI)
	if err != nil {
		t.Fatal(err)
	}
	return r.Id
}

// start returns a Recorder flushed by Close only.
func start(t *testing.T, s *apptest.Server, retention time.Duration) *usage.Recorder {
	t.Helper()
	r, err := usage.Start(s.App, usage.Config{Retention: retention, FlushEvery: time.Hour}, s.App.Logger())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func history(t *testing.T, r *usage.Recorder, id string, days int, now time.Time) []usage.Day {
	t.Helper()
	h, err := r.History(id, days, now)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Two instances sharing the data directory add their counts up, and what
// one has not saved yet is part of its answer.
func TestInstancesAddUp(t *testing.T) {
	s := apptest.Start(t, "")
	id := keyID(t, s)
	now := time.Now()
	a, b := start(t, s, usage.DefaultRetention), start(t, s, usage.DefaultRetention)
	for range 3 {
		a.Record(id, "listPets", now, usage.Served)
	}
	b.Record(id, "listPets", now, usage.Limited)
	b.Record(id, "listPets", now, usage.Limited)
	if h := history(t, a, id, 1, now); h[0].Counts != (usage.Counts{Requests: 3}) {
		t.Errorf("a before saving: %+v, want its own 3 requests", h[0])
	}
	for _, r := range []*usage.Recorder{a, b} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c := start(t, s, usage.DefaultRetention)
	defer c.Close()
	c.Record(id, "listPets", now, usage.Served)
	h := history(t, c, id, 1, now)
	if want := (usage.Counts{Requests: 6, Limited: 2}); h[0].Counts != want || h[0].Day != now.UTC().Format(time.DateOnly) {
		t.Errorf("today %+v, want %+v", h[0], want)
	}
	// One row per key, hour, operation and outcome, whoever added to it.
	if n := s.CountRecords(t, usage.Collection); n != 2 {
		t.Errorf("%d rows, want 2 (served and limited listPets this hour)", n)
	}
}

// Each request is kept under its UTC hour, operation and outcome; a day
// adds its hours up, and so does a report's month.
func TestHoursOperationsOutcomes(t *testing.T) {
	s := apptest.Start(t, "")
	id, other := keyID(t, s), keyID(t, s)
	// In a zone 14 hours ahead of UTC, the local day is mostly not the UTC one.
	now := time.Now().In(time.FixedZone("UTC+14", 14*3600))
	dayStart := now.UTC().Truncate(24 * time.Hour)
	r := start(t, s, usage.DefaultRetention)
	record := func(op string, at time.Time, o usage.Outcome, n int) {
		for range n {
			r.Record(id, op, at, o)
		}
	}
	record("listPets", dayStart, usage.Served, 4)
	record("listPets", dayStart.Add(59*time.Minute), usage.Served, 1) // the same hour
	record("createPet", dayStart.Add(time.Hour), usage.Refused, 2)
	record("getPet", dayStart.Add(time.Hour), usage.Failed, 1)
	record("getUsage", dayStart.Add(time.Hour), usage.Limited, 3)
	record("listPets", dayStart.Add(-time.Second), usage.Served, 7) // yesterday's last hour
	r.Record(other, "listPets", dayStart, usage.Served)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	var rows []struct {
		Hour      string `db:"hour"`
		Operation string `db:"operation"`
		Outcome   string `db:"outcome"`
		Requests  int64  `db:"requests"`
	}
	if err := s.App.DB().Select("hour", "operation", "outcome", "requests").From(usage.Collection).
		Where(dbx.HashExp{"api_key": id}).OrderBy("hour", "operation").All(&rows); err != nil {
		t.Fatal(err)
	}
	hour := func(d time.Duration) string { return dayStart.Add(d).Format("2006-01-02 15:04:05.000Z") }
	want := []struct{ hour, operation, outcome string }{
		{hour(-time.Hour), "listPets", "served"},
		{hour(0), "listPets", "served"},
		{hour(time.Hour), "createPet", "refused"},
		{hour(time.Hour), "getPet", "failed"},
		{hour(time.Hour), "getUsage", "limited"},
	}
	wantN := []int64{7, 5, 2, 1, 3}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i, w := range want {
		if rows[i].Hour != w.hour || rows[i].Operation != w.operation || rows[i].Outcome != w.outcome || rows[i].Requests != wantN[i] {
			t.Errorf("row %d: %+v, want %+v with %d requests", i, rows[i], w, wantN[i])
		}
	}

	r = start(t, s, usage.DefaultRetention)
	defer r.Close()
	today := usage.Counts{Requests: 11, Refused: 2, Limited: 3, Failed: 1}
	if h := history(t, r, id, 2, now); h[0].Requests != 7 || h[1].Counts != today {
		t.Errorf("yesterday %+v, today %+v; want 7 served, then %+v", h[0], h[1], today)
	}
	if today.Served() != 5 || today.Admitted() != 8 {
		t.Errorf("served %d, admitted %d; want 5 and 8", today.Served(), today.Admitted())
	}
	counts, err := r.Today(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 2 || counts[id] != today || counts[other].Requests != 1 {
		t.Errorf("every key today: %+v", counts)
	}
	report, err := r.Report(id, now)
	if err != nil {
		t.Fatal(err)
	}
	wantMonth := today
	if now.UTC().Day() > 1 {
		wantMonth.Requests += 7 // yesterday is this month's
	}
	if len(report.Days) != usage.ReportDays || report.Today.Counts != today || report.Month.Counts != wantMonth ||
		report.Month.Month != now.UTC().Format("2006-01") || report.Days[usage.ReportDays-1] != report.Today {
		t.Errorf("report %+v; want today %+v, month %+v", report, today, wantMonth)
	}
}

// Hours older than the retention are purged at start; 0 keeps them all.
func TestRetention(t *testing.T) {
	s := apptest.Start(t, "")
	id := keyID(t, s)
	now := time.Now()
	r := start(t, s, 0)
	r.Record(id, "listPets", now.Add(-500*24*time.Hour), usage.Served)
	r.Record(id, "listPets", now.Add(-10*24*time.Hour-time.Hour), usage.Served)
	r.Record(id, "listPets", now.Add(-10*24*time.Hour+time.Hour), usage.Served)
	r.Record(id, "listPets", now, usage.Served)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := start(t, s, 0).Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.CountRecords(t, usage.Collection); n != 4 {
		t.Fatalf("%d rows kept forever, want 4", n)
	}
	if err := start(t, s, usage.DefaultRetention).Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.CountRecords(t, usage.Collection); n != 3 {
		t.Errorf("%d rows within 400 days, want 3", n)
	}
	if err := start(t, s, 10*24*time.Hour).Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.CountRecords(t, usage.Collection); n != 2 {
		t.Errorf("%d rows within 10 days, want 2", n)
	}
}

func TestOutcomeOf(t *testing.T) {
	for status, want := range map[int]usage.Outcome{
		http.StatusOK: usage.Served, http.StatusCreated: usage.Served, http.StatusNotModified: usage.Served,
		http.StatusBadRequest: usage.Refused, http.StatusForbidden: usage.Refused, http.StatusGone: usage.Refused,
		http.StatusTooManyRequests:     usage.Limited,
		http.StatusInternalServerError: usage.Failed, http.StatusServiceUnavailable: usage.Failed,
	} {
		if got := usage.OutcomeOf(status); got != want {
			t.Errorf("%d: %s, want %s", status, got, want)
		}
	}
}

// What counting adds to a request: one Record, from every CPU at once, of
// a few keys and operations in one hour (go test -bench Record
// ./internal/usage/).
func BenchmarkRecord(b *testing.B) {
	s := apptest.Start(b, "")
	r, err := usage.Start(s.App, usage.Config{FlushEvery: time.Hour}, s.App.Logger())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	keys := []string{"key000000000001", "key000000000002", "key000000000003", "key000000000004"}
	operations := []string{"listPets", "getPet", "createPet"}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Record(keys[i%len(keys)], operations[i%len(operations)], now, usage.Served)
			i++
		}
	})
}

// A node that may not write (a cluster node whose fence closed) writes no
// counts: the loop keeps them in memory and Close drops them; Flush, the
// handover's, writes them whatever the fence says.
func TestNoCountsWrittenWhileTheNodeMayNotWrite(t *testing.T) {
	s := apptest.Start(t, "")
	id := keyID(t, s)
	now := time.Now()
	var mayWrite atomic.Bool
	open := func() bool { return mayWrite.Load() }
	saved := func() int64 {
		var n int64
		if err := s.App.DB().NewQuery(`SELECT COALESCE(SUM(requests), 0) FROM ` + usage.Collection + ` WHERE api_key = {:key}`).
			Bind(dbx.Params{"key": id}).Row(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, err := usage.Start(s.App, usage.Config{FlushEvery: 10 * time.Millisecond, Gate: writegate.Fenced(open)}, s.App.Logger())
	if err != nil {
		t.Fatal(err)
	}
	r.Record(id, "listPets", now, usage.Served)
	time.Sleep(100 * time.Millisecond)
	if n := saved(); n != 0 {
		t.Fatalf("%d requests saved while the node may not write", n)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := saved(); n != 1 {
		t.Fatalf("after Flush, %d requests saved, want 1", n)
	}
	r.Record(id, "listPets", now, usage.Served)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := saved(); n != 1 {
		t.Errorf("after Close while the node may not write, %d requests saved, want the 1 flushed", n)
	}

	mayWrite.Store(true)
	r2, err := usage.Start(s.App, usage.Config{FlushEvery: 10 * time.Millisecond, Gate: writegate.Fenced(open)}, s.App.Logger())
	if err != nil {
		t.Fatal(err)
	}
	r2.Record(id, "listPets", now, usage.Served)
	// The loop's flush, not Close's: it is waited for, however slow the
	// machine.
	for deadline := time.Now().Add(30 * time.Second); saved() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("while the node may write, %d requests saved after 30 s, want 2", saved())
		}
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
}
