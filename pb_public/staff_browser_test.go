package pbpublic_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
	"petstore/internal/apptest"
)

// A store-staff user, in headless Chromium, signs in on /staff/, issues a key
// and reads it once, rolls it with a grace period, revokes it, lifts a ban
// and reads a key's use in the chart; /v1 answers as each step says.
func TestStaffPageInChromium(t *testing.T) {
	requireChromium(t)
	s := apptest.Start(t, "")
	s.SuperuserToken(t, "staff@example.com", "a long enough password")
	ctx := newBrowser(t)
	shots := screenshots(t, ctx)

	var mu sync.Mutex
	foreign := map[network.RequestID]string{}
	var failures []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") {
				foreign[ev.RequestID] = u
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				failures = append(failures, fmt.Sprintf("%s: %d", ev.Response.URL, ev.Response.Status))
			}
		case *runtime.EventExceptionThrown:
			failures = append(failures, ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				failures = append(failures, fmt.Sprintf("console error: %v", ev.Args))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(selector string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
		if err != nil {
			t.Fatalf("%s: %v", selector, err)
		}
		return s
	}
	// waitFor waits until the JavaScript condition holds.
	waitFor := func(what, condition string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](condition)); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	v1 := func(key string) (int, string) {
		t.Helper()
		r := s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		return r.StatusCode, string(r.Body)
	}
	row := func(id string) string { return `#keys tr[data-id="` + id + `"]` }
	rowHas := func(id, selector string) string {
		return fmt.Sprintf(`document.querySelector('%s %s')`, row(id), selector)
	}
	// issue fills the create form and returns the key the page shows once.
	issue := func(name, perMinute string) (key, id string) {
		t.Helper()
		do("open the create form", chromedp.Click(chromedp.CSS("#new-key")), chromedp.WaitVisible(chromedp.CSS("#create-dialog")),
			chromedp.SetValue(chromedp.CSS(`#create-form [name=plan]`), "free"),
			chromedp.SendKeys(chromedp.CSS(`#create-form [name=name]`), name))
		if perMinute != "" {
			do("own quota", chromedp.SendKeys(chromedp.CSS(`#create-form [name=perMinute]`), perMinute))
		}
		do("create", chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#key-value")))
		key = text("#key-value")
		r, err := s.App.FindFirstRecordByData(apikeys.Collection, apikeys.HashField, apikeys.Hash(key))
		if err != nil {
			t.Fatalf("the page showed %q, which is no stored key: %v", key, err)
		}
		return key, r.Id
	}
	// done closes the key dialog; the key must then be gone from the page.
	done := func(key string) {
		t.Helper()
		do("close the key", chromedp.Click(chromedp.CSS("#key-done")), chromedp.WaitNotVisible(chromedp.CSS("#key-dialog")))
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(html, key) || strings.Contains(html, key[len(apikeys.Prefix)+8:]) {
			t.Errorf("the key is still on the page after Done")
		}
	}

	// The home page names the address it is served from, and leads to the
	// staff page.
	do("home page", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("pre .origin")))
	if got := text("pre .origin"); got != s.URL {
		t.Errorf("the home page's example uses %q, want %q", got, s.URL)
	}
	shots("home")

	// Sign in.
	do("sign in", chromedp.Click(chromedp.CSS(`a[href="/staff/"]`)), chromedp.WaitVisible(chromedp.CSS("#signin-form")),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=email]`), "staff@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=password]`), "a long enough password"),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#keys-page")), chromedp.WaitVisible(chromedp.CSS("#empty")))
	shots("signed-in")

	// Create a key and read it once.
	key, id := issue("web shop", "")
	shots("new-key-shown-once")
	done(key)
	waitFor("the new key's row", rowHas(id, ".state-active"))
	if status, body := v1(key); status != http.StatusOK {
		t.Fatalf("the new key on /v1: %d %s", status, body)
	}

	// Roll it with a 1-hour grace: old and new both work; the table shows both.
	do("roll", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=roll]`)), chromedp.WaitVisible(chromedp.CSS("#roll-dialog")),
		chromedp.Click(chromedp.CSS(`#roll-form input[name=grace][value="3600"]`)),
		chromedp.Click(chromedp.CSS(`#roll-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#key-value")))
	rolled := text("#key-value")
	if !strings.HasPrefix(rolled, apikeys.Prefix) || rolled == key {
		t.Fatalf("rolled key %q", rolled)
	}
	done(rolled)
	waitFor("the old secret in the row", rowHas(id, ".previous"))
	if got := text(row(id) + " .previous"); !strings.Contains(got, apikeys.DisplayPrefix(key)) || !strings.Contains(got, "works until") {
		t.Errorf("the row shows the old secret as %q", got)
	}
	if got := text(row(id) + " .prefix"); got != apikeys.DisplayPrefix(rolled)+"…" {
		t.Errorf("the row shows the key as %q, want the new prefix", got)
	}
	shots("rolled-both-secrets")
	for name, k := range map[string]string{"old": key, "new": rolled} {
		if status, body := v1(k); status != http.StatusOK {
			t.Errorf("the %s secret during the grace period: %d %s", name, status, body)
		}
	}

	// Revoke, confirmed: the next request is refused.
	do("revoke", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=revoke]`)), chromedp.WaitVisible(chromedp.CSS("#revoke-dialog")),
		chromedp.Click(chromedp.CSS(`#revoke-form button[type=submit]`)))
	waitFor("the revoked state", rowHas(id, ".state-revoked"))
	for _, k := range []string{rolled, key} {
		if status, body := v1(k); status != http.StatusUnauthorized {
			t.Errorf("a revoked key on /v1: %d %s, want 401", status, body)
		}
	}

	// Drive a key into a ban through /v1, then lift it from the page.
	greedy, greedyID := issue("greedy client", "1")
	done(greedy)
	requests, refused := 0, 0
	for {
		status, body := v1(greedy)
		requests++
		if status == http.StatusTooManyRequests {
			refused++
		}
		if strings.Contains(body, "api_key_banned") {
			break
		}
		if requests > 20 {
			t.Fatalf("no ban after %d requests", requests)
		}
	}
	do("refresh", chromedp.Click(chromedp.CSS("#refresh")))
	waitFor("the banned state", rowHas(greedyID, ".state-banned"))
	if got := text(row(greedyID) + " .state"); !strings.HasPrefix(got, "banned until ") {
		t.Errorf("banned key's state reads %q", got)
	}
	shots("banned")
	do("lift the ban", chromedp.Click(chromedp.CSS(row(greedyID)+` button[data-action="lift ban"]`)))
	waitFor("the active state", rowHas(greedyID, ".state-active"))
	status, body := v1(greedy)
	if status != http.StatusOK {
		t.Fatalf("after lifting the ban: %d %s, want 200", status, body)
	}
	requests++

	// The chart shows today's count.
	do("usage", chromedp.Click(chromedp.CSS(row(greedyID)+` button[data-action=usage]`)), chromedp.WaitVisible(chromedp.CSS("#usage-chart")))
	today, err := chromedp.Run(ctx, chromedp.Poll[[]int](`(() => {
		const c = Chart.getChart(document.querySelector('#usage-chart'));
		return c && c.data.labels.length === 30 && c.data.datasets.map(d => d.data.at(-1));
	})()`))
	if err != nil {
		t.Fatalf("the chart: %v", err)
	}
	if want := []int{requests - refused, refused}; !slices.Equal(today, want) {
		t.Errorf("today's bar (served, refused) = %v, want %v", today, want)
	}
	if got, want := text("#usage-today"), fmt.Sprintf("%d requests, %d refused", requests, refused); !strings.Contains(got, want) {
		t.Errorf("today's total reads %q, want %q", got, want)
	}
	shots("usage-chart")

	// Filter and search.
	do("filter revoked", chromedp.SetValue(chromedp.CSS("#filter-state"), "revoked"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#filter-state').dispatchEvent(new Event('change'))`))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#keys tbody tr').length`)); err != nil || n != 1 {
		t.Errorf("%d rows with the revoked filter (%v), want 1", n, err)
	}
	do("search", chromedp.SetValue(chromedp.CSS("#filter-state"), ""),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#filter-state').dispatchEvent(new Event('change'))`),
		chromedp.SendKeys(chromedp.CSS("#search"), "greedy"))
	if got := text("#keys tbody"); !strings.Contains(got, "greedy client") || strings.Contains(got, "web shop") {
		t.Errorf("searching for greedy shows %q", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the page sent requests outside the service: %q", slices.Collect(maps.Values(foreign)))
	}
	if len(failures) > 0 {
		t.Errorf("failures in the page: %q", failures)
	}
}

// screenshots returns a function saving a numbered screenshot of the page
// under a directory the test prints.
func screenshots(t *testing.T, ctx context.Context) func(name string) {
	dir, err := os.MkdirTemp("", "petstore-staff-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of the staff page: %s", dir)
	n := 0
	return func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		n++
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%s.png", n, name)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
