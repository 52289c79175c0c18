package limits

import (
	"net/http"
	"strconv"
	"time"
)

// Window is the state of one rate window after a request.
type Window struct {
	Name   string // "minute" or "day": the policy name in RateLimit fields
	Period time.Duration
	Limit  int64
	// Used is how many requests the window holds (refused ones take
	// nothing): past Limit when the limit was lowered meanwhile.
	Used int64
	// Remaining is how many more requests the window admits now.
	Remaining int64
	Reset     time.Time // when the count starts again
	// Reached: the request was refused with this window at its limit (or,
	// for a key's minute window, banned).
	Reached bool
}

// newWindow is a window holding count admitted requests after a request,
// refused or not. Refused requests take nothing from any window.
func newWindow(name string, period time.Duration, limit, count int64, reset time.Time, refused bool) Window {
	return Window{Name: name, Period: period, Limit: limit, Used: count, Remaining: max(limit-count, 0), Reset: reset,
		Reached: refused && count >= limit}
}

// Decision is the outcome of one request.
type Decision struct {
	At          time.Time // when it was decided: the time of its windows and its day
	Windows     []Window
	BannedUntil time.Time // after At: the key is banned until then
}

// banned is d with its key banned until until: the minute window admits
// nothing more until the ban ends, so that every header says the same.
func (d Decision) banned(until time.Time) Decision {
	d.BannedUntil = until
	m := &d.Windows[0]
	m.Remaining, m.Reached = 0, true
	if until.After(m.Reset) {
		m.Reset = until
	}
	return d
}

// Exceeded reports whether the request was refused: over a window's limit,
// or banned.
func (d Decision) Exceeded() bool {
	for _, w := range d.Windows {
		if w.Reached {
			return true
		}
	}
	return false
}

// DayUsedUp reports whether the day window admits no more requests.
func (d Decision) DayUsedUp() bool {
	for _, w := range d.Windows {
		if w.Name == "day" && w.Remaining == 0 && w.Limit > 0 {
			return true
		}
	}
	return false
}

// Day is the day window of a key's decision; the zero Window (Limit 0)
// for a decision without one.
func (d Decision) Day() Window {
	for _, w := range d.Windows {
		if w.Name == "day" {
			return w
		}
	}
	return Window{}
}

// Banned reports whether the request was refused for its key's ban.
func (d Decision) Banned() bool { return d.BannedUntil.After(d.At) }

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

// RetryAfter is how many whole seconds a refused caller must wait: until
// every window that refused it has reset (a ban holds the minute window).
func (d Decision) RetryAfter() int64 {
	var until time.Time
	for _, w := range d.Windows {
		if w.Reached && w.Reset.After(until) {
			until = w.Reset
		}
	}
	return secondsUntil(d.At, until)
}

// HeaderNames are the response headers SetHeaders writes, in its order:
// Retry-After, only on a refusal, last.
var HeaderNames = [...]string{
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
	"RateLimit-Policy", "RateLimit", "Retry-After",
}

// SetHeaders writes the rate-limit headers of d: the X-RateLimit-* trio for
// the binding window, the IETF draft's RateLimit-Policy and RateLimit fields
// for every window, and Retry-After when the request is refused. All of them
// are read from the same windows at the same time, so they agree: on a
// refusal, the binding window has 0 remaining and resets when Retry-After
// ends, and so does every window whose RateLimit item has r=0.
func (d Decision) SetHeaders(h http.Header) {
	// Every value is appended to one buffer, made one string, and each
	// header gets its slice of it through one []string, under its
	// canonical name: this runs on every request, and Header.Set would
	// cost two or three allocations a header (the canonical name, the
	// value's slice, the value).
	var buf [256]byte
	var ends [len(HeaderNames)]int
	v := buf[:0]
	b := d.binding()
	v = strconv.AppendInt(v, b.Limit, 10)
	ends[0] = len(v)
	v = strconv.AppendInt(v, b.Remaining, 10)
	ends[1] = len(v)
	v = strconv.AppendInt(v, ceilUnix(b.Reset), 10)
	ends[2] = len(v)
	for i, w := range d.Windows {
		if i > 0 {
			v = append(v, ", "...)
		}
		v = appendItem(v, w.Name, ";q=", w.Limit, ";w=", int64(w.Period/time.Second))
	}
	ends[3] = len(v)
	for i, w := range d.Windows {
		if i > 0 {
			v = append(v, ", "...)
		}
		v = appendItem(v, w.Name, ";r=", w.Remaining, ";t=", secondsUntil(d.At, w.Reset))
	}
	ends[4] = len(v)
	n := len(HeaderNames) - 1
	if d.Exceeded() {
		v = strconv.AppendInt(v, d.RetryAfter(), 10)
		ends[n] = len(v)
		n++
	}
	all := string(v)
	values := make([]string, n)
	from := 0
	for i := range n {
		values[i] = all[from:ends[i]]
		from = ends[i]
		h[canonicalHeaderNames[i]] = values[i : i+1 : i+1]
	}
}

// canonicalHeaderNames are HeaderNames as http.Header keys them.
var canonicalHeaderNames = func() (names [len(HeaderNames)]string) {
	for i, name := range HeaderNames {
		names[i] = http.CanonicalHeaderKey(name)
	}
	return names
}()

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
