package staff_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"petstore/testkit/apptest"
)

// The superuser password guards the dashboard and every staff route:
// guessing it is throttled by PocketBase's own rate limiter (on by a
// migration). Of 30 wrong passwords in a row from one address, one gets 429
// long before the 30th; the right password still signs in once the window
// has passed.
func TestPasswordGuessingIsThrottled(t *testing.T) {
	apptest.Slow(t)
	s := apptest.Start(t, "")
	s.SuperuserToken(t, "staff@example.com", "a long enough password")
	signIn := func(password string) int {
		return s.Do(t, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
			map[string]string{"identity": "staff@example.com", "password": password}).StatusCode
	}
	first429 := 0
	statuses := map[int]int{}
	for i := 1; i <= 30; i++ {
		status := signIn("guess number " + string(rune('A'+i)))
		statuses[status]++
		if status == http.StatusTooManyRequests && first429 == 0 {
			first429 = i
		}
	}
	if first429 == 0 || first429 >= 30 || statuses[http.StatusOK] != 0 {
		t.Fatalf("30 wrong passwords: %v, first 429 at attempt %d; want a 429 before the 30th and no sign-in", statuses, first429)
	}
	if first429 > 3 {
		t.Errorf("first 429 at attempt %d, want it by the 3rd (PocketBase's *:auth rule: 2 per 3 seconds)", first429)
	}
	t.Logf("30 wrong passwords: %v, first 429 at attempt %d", statuses, first429)

	time.Sleep(3*time.Second + 200*time.Millisecond)
	if status := signIn("a long enough password"); status != http.StatusOK {
		t.Errorf("the right password after the window: %d, want 200", status)
	}
}

// Behind a trusted proxy header, the password throttle counts a client
// network, as /v1 counts keyless callers: 200 wrong passwords from 200
// addresses of one IPv6 /64 get 429 after the rule's 2, an IPv4-mapped
// address shares its IPv4 address's count, and another /64 is unaffected.
func TestPasswordGuessingIsThrottledPerNetwork(t *testing.T) {
	s := apptest.Start(t, "")
	s.SuperuserToken(t, "staff@example.com", "a long enough password")
	s.App.Settings().TrustedProxy.Headers = []string{"X-Forwarded-For"}
	signIn := func(from, password string) int {
		return s.Do(t, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
			map[string]string{"identity": "staff@example.com", "password": password}, "X-Forwarded-For", from).StatusCode
	}

	started := time.Now()
	statuses := map[int]int{}
	for i := 1; i <= 200; i++ {
		status := signIn(fmt.Sprintf("2001:db8:1:2::%x", i), fmt.Sprintf("guess %d", i))
		statuses[status]++
		if i == 3 && status != http.StatusTooManyRequests {
			t.Fatalf("the 3rd wrong password from the /64: %d, want 429 (PocketBase's *:auth rule: 2 per 3 seconds)", status)
		}
	}
	// Each 3 seconds, a new window admits 2.
	windows := int(time.Since(started)/(3*time.Second)) + 1
	if statuses[http.StatusBadRequest] > 2*windows || statuses[http.StatusOK] != 0 ||
		statuses[http.StatusBadRequest]+statuses[http.StatusTooManyRequests] != 200 {
		t.Fatalf("200 wrong passwords from one /64 in %d window(s): %v; want at most %d answered 400, the others 429",
			windows, statuses, 2*windows)
	}
	t.Logf("200 wrong passwords from one /64 in %v: %v", time.Since(started).Round(time.Millisecond), statuses)

	if status := signIn("2001:db8:1:3::1", "a long enough password"); status != http.StatusOK {
		t.Errorf("the right password from another /64: %d, want 200", status)
	}

	for i, from := range []string{"203.0.113.5", "::ffff:203.0.113.5", "::ffff:cb00:7105"} {
		status := signIn(from, "wrong")
		if want := []int{http.StatusBadRequest, http.StatusBadRequest, http.StatusTooManyRequests}[i]; status != want {
			t.Errorf("wrong password %d from %s: %d, want %d (an IPv4-mapped address is its IPv4 address)", i+1, from, status, want)
		}
	}
}
