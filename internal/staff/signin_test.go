package staff_test

import (
	"net/http"
	"testing"
	"time"

	"petstore/internal/apptest"
)

// The superuser password guards the dashboard and every staff route:
// guessing it is throttled by PocketBase's own rate limiter (on by a
// migration). Of 30 wrong passwords in a row from one address, one gets 429
// long before the 30th; the right password still signs in once the window
// has passed.
func TestPasswordGuessingIsThrottled(t *testing.T) {
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
