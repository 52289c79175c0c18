package usage_test

import (
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
)

func keyID(t *testing.T, s *apptest.Server) string {
	t.Helper()
	_, r, err := apikeys.Create(s.App, apikeys.NewKey{Plan: "free", Name: "shop"}, audit.CLI)
	if err != nil {
		t.Fatal(err)
	}
	return r.Id
}

func start(t *testing.T, s *apptest.Server) *usage.Recorder {
	t.Helper()
	r, err := usage.Start(s.App, time.Hour, s.App.Logger()) // flushed by Close only
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
	a, b := start(t, s), start(t, s)
	for range 3 {
		a.Record(id, now, false)
	}
	b.Record(id, now, true)
	b.Record(id, now, true)
	if h := history(t, a, id, 1, now); h[0].Requests != 3 || h[0].Limited != 0 {
		t.Errorf("a before saving: %+v, want its own 3 requests", h[0])
	}
	for _, r := range []*usage.Recorder{a, b} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c := start(t, s)
	defer c.Close()
	c.Record(id, now, false)
	h := history(t, c, id, 1, now)
	if want := (usage.Counts{Requests: 6, Limited: 2}); h[0].Counts != want || h[0].Day != now.UTC().Format("2006-01-02") {
		t.Errorf("today %+v, want %+v", h[0], want)
	}
}

// Days are UTC days, and only the last 90 are kept.
func TestDaysAndRetention(t *testing.T) {
	s := apptest.Start(t, "")
	id := keyID(t, s)
	// In a zone 14 hours ahead of UTC, the local day is mostly not the UTC one.
	now := time.Now().In(time.FixedZone("UTC+14", 14*3600))
	first, today := now.UTC().AddDate(0, 0, -89).Format("2006-01-02"), now.UTC().Format("2006-01-02")
	r := start(t, s)
	r.Record(id, now.AddDate(0, 0, -100), false)
	r.Record(id, now.AddDate(0, 0, -89), false)
	r.Record(id, now.AddDate(0, 0, -89), true)
	r.Record(id, now, false)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.App.CountRecords(usage.Collection); n != 3 {
		t.Fatalf("%d rows saved, want 3", n)
	}

	r = start(t, s) // purges the days before the last 90
	defer r.Close()
	if n, _ := s.App.CountRecords(usage.Collection); n != 2 {
		t.Errorf("%d rows after the purge, want 2", n)
	}
	h := history(t, r, id, 90, now)
	if len(h) != 90 || h[0].Day != first || h[89].Day != today {
		t.Fatalf("90 days from %s to %s, want %s to %s (UTC)", h[0].Day, h[len(h)-1].Day, first, today)
	}
	if h[0].Counts != (usage.Counts{Requests: 2, Limited: 1}) || h[89].Requests != 1 {
		t.Errorf("first day %+v, last day %+v", h[0], h[89])
	}
	for _, d := range h[1:89] {
		if d.Requests != 0 {
			t.Errorf("day %s has %d requests, want none", d.Day, d.Requests)
		}
	}
}
