package requestlog

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// SuccessesPerSecond bounds the rows of successful requests (status below
// 400) in Bounded mode: each second, the first SuccessesPerSecond have rows
// of their own, and one row counts the others.
const SuccessesPerSecond = 100

// successes holds Bounded mode's count of the current second. A busy server
// (thousands of requests a second) writes a few hundred rows a second
// instead of one per request, the errors all of them: the request log costs
// a small part of the server's CPU however busy it is, and the dashboard's
// Logs still shows every error and what normal traffic looks like.
type successes struct {
	mu      sync.Mutex
	second  int64 // Unix second of written and counted
	written int
	counted int64
}

// admit reports whether a successful request at now gets a row of its own.
// It returns the count row of a past second, if one is due.
func (s *successes) admit(now time.Time) (admitted bool, due []entry) {
	second := now.Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	if second != s.second {
		due = s.takeLocked()
		s.second, s.written = second, 0
	}
	if s.written < SuccessesPerSecond {
		s.written++
		return true, due
	}
	s.counted++
	return false, due
}

// due returns the count row of a second before now's, or of any second with
// a zero now.
func (s *successes) due(now time.Time) []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !now.IsZero() && now.Unix() == s.second {
		return nil
	}
	return s.takeLocked()
}

func (s *successes) takeLocked() []entry {
	if s.counted == 0 {
		return nil
	}
	at := time.Unix(s.second, 0).UTC()
	n := s.counted
	s.counted = 0
	return []entry{{
		level: slog.LevelInfo,
		message: fmt.Sprintf("Request log: %d more successful requests in the second from %s, counted, not logged one by one",
			n, at.Format(time.TimeOnly)),
		data:    map[string]any{"type": "requestlog", "count": n, "second": at.Format(time.RFC3339)},
		created: at.Add(time.Second - time.Millisecond),
	}}
}
