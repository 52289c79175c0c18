package limits

import (
	"net/http"
	"strconv"
	"time"
)

// Window is the state of one rate window after a request.
type Window struct {
	Name      string // "minute" or "day": the policy name in RateLimit fields
	Period    time.Duration
	Limit     int64
	Remaining int64
	Reset     time.Time // when the count starts again
	Reached   bool      // this request went over the limit
}

// newWindow is a window after count requests in it.
func newWindow(name string, period time.Duration, limit, count int64, reset time.Time) Window {
	return Window{Name: name, Period: period, Limit: limit, Remaining: max(limit-count, 0), Reached: count > limit, Reset: reset}
}

// Decision is the outcome of counting one request.
type Decision struct {
	Windows     []Window
	BannedUntil time.Time // non-zero: the key is banned until then
}

// Exceeded reports whether the request went over a window's limit.
func (d Decision) Exceeded() bool {
	for _, w := range d.Windows {
		if w.Reached {
			return true
		}
	}
	return false
}

// Banned reports whether the key is banned at now.
func (d Decision) Banned(now time.Time) bool { return d.BannedUntil.After(now) }

// binding is the window that X-RateLimit-* report: the one with fewer
// requests remaining; on a tie, the one that resets later.
func (d Decision) binding() Window {
	b := d.Windows[0]
	for _, w := range d.Windows[1:] {
		if w.Remaining < b.Remaining || (w.Remaining == b.Remaining && w.Reset.After(b.Reset)) {
			b = w
		}
	}
	return b
}

// RetryAfter is how many whole seconds a refused caller must wait: until its
// ban ends, or until every window it exceeded has reset.
func (d Decision) RetryAfter(now time.Time) int64 {
	until := d.BannedUntil
	for _, w := range d.Windows {
		if w.Reached && w.Reset.After(until) {
			until = w.Reset
		}
	}
	return secondsUntil(now, until)
}

// HeaderNames are the response headers SetHeaders writes.
var HeaderNames = []string{
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Policy", "RateLimit", "Retry-After",
}

// SetHeaders writes the rate-limit headers of d: the X-RateLimit-* trio for
// the binding window, the IETF draft's RateLimit-Policy and RateLimit fields
// for every window, and Retry-After when the request is refused.
func (d Decision) SetHeaders(h http.Header, now time.Time) {
	b := d.binding()
	remaining, reset := b.Remaining, b.Reset
	refused := d.Banned(now) || d.Exceeded()
	if d.Banned(now) {
		remaining, reset = 0, d.BannedUntil
	}
	if refused {
		remaining = 0
	}
	h.Set("X-RateLimit-Limit", strconv.FormatInt(b.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilUnix(reset), 10))

	// Appended by hand, without fmt's reflection: this runs on every request.
	var policy, state [128]byte
	p, st := policy[:0], state[:0]
	for i, w := range d.Windows {
		if i > 0 {
			p, st = append(p, ", "...), append(st, ", "...)
		}
		p = appendItem(p, w.Name, ";q=", w.Limit, ";w=", int64(w.Period/time.Second))
		st = appendItem(st, w.Name, ";r=", w.Remaining, ";t=", secondsUntil(now, w.Reset))
	}
	h.Set("RateLimit-Policy", string(p))
	h.Set("RateLimit", string(st))

	if refused {
		h.Set("Retry-After", strconv.FormatInt(d.RetryAfter(now), 10))
	}
}

// appendItem appends a structured-field item: "name";k1=v1;k2=v2 (k1 and
// k2 with their ';' and '=').
func appendItem(b []byte, name, k1 string, v1 int64, k2 string, v2 int64) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"')
	b = append(b, k1...)
	b = strconv.AppendInt(b, v1, 10)
	b = append(b, k2...)
	return strconv.AppendInt(b, v2, 10)
}

func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// secondsUntil is the whole seconds from now to t, rounded up, at least 1
// when t is ahead.
func secondsUntil(now, t time.Time) int64 {
	d := t.Sub(now)
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
