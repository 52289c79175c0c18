package pets

import (
	"strconv"
	"testing"
	"time"
)

// Ids grow with every call, also when the clock goes back or stands
// still, and have IDPattern's 15 digits from 1970 to 2286.
func TestIDsGrowWhateverTheClock(t *testing.T) {
	var c idClock
	now := time.Now()
	var last int64
	for i, at := range []time.Time{now, now, now.Add(-time.Hour), time.Unix(0, 0), now.Add(time.Millisecond), time.Date(2286, 1, 1, 0, 0, 0, 0, time.UTC)} {
		s := c.next(at)
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || len(s) != 15 || s[0] == '0' {
			t.Fatalf("id %d at %s: %q, want 15 digits", i, at, s)
		}
		if id <= last {
			t.Errorf("id %d at %s: %d, not after %d", i, at, id, last)
		}
		last = id
	}
	c.movePast(last + 1000)
	if id, _ := strconv.ParseInt(c.next(now), 10, 64); id != last+1001 {
		t.Errorf("after movePast(%d): %d", last+1000, id)
	}
	c.movePast(5)
	if id, _ := strconv.ParseInt(c.next(now), 10, 64); id != last+1002 {
		t.Errorf("movePast to an earlier id moved the clock back: %d", id)
	}
}
