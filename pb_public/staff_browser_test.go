package pbpublic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// staffPage is the staff page in a headless Chromium, driven as a store
// staff member would, with what it saw: requests outside the service, error
// answers it was not expected to get, script errors.
type staffPage struct {
	t   *testing.T
	s   *apptest.Server
	ctx context.Context
	dir string // screenshots
	n   int    // screenshots taken

	mu       sync.Mutex
	foreign  []string
	failures []string
	expected map[string]int // "METHOD path-prefix" -> error answers the test provokes
}

func openStaffPage(t *testing.T) *staffPage {
	return openStaffPageWith(t, apptest.Config{})
}

// openStaffPageWith is openStaffPage on an app started with cfg.
func openStaffPageWith(t *testing.T, cfg apptest.Config) *staffPage {
	requireChromium(t)
	s := apptest.StartWith(t, cfg)
	s.SuperuserToken(t, "staff@example.com", "a long enough password")
	dir, err := os.MkdirTemp("", "petstore-staff-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of the staff page: %s", dir)
	p := &staffPage{t: t, s: s, ctx: newBrowser(t), dir: dir, expected: map[string]int{}}
	requests := map[network.RequestID]string{}
	err = chromedp.Listen(p.ctx, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests[ev.RequestID] = ev.Request.Method
			if u := ev.Request.URL; !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") {
				p.foreign = append(p.foreign, u)
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				what := requests[ev.RequestID] + " " + strings.TrimPrefix(ev.Response.URL, s.URL)
				for prefix, n := range p.expected {
					if n > 0 && strings.HasPrefix(what, prefix) {
						p.expected[prefix]--
						return
					}
				}
				p.failures = append(p.failures, fmt.Sprintf("%s: %d", what, ev.Response.Status))
			}
		case *runtime.EventExceptionThrown:
			p.failures = append(p.failures, ev.ExceptionDetails.Text+" "+fmt.Sprint(ev.ExceptionDetails.Exception.Description))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				p.failures = append(p.failures, fmt.Sprintf("console error: %v", ev.Args))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.foreign) > 0 {
			t.Errorf("the page sent requests outside the service: %q", p.foreign)
		}
		if len(p.failures) > 0 {
			t.Errorf("failures in the page: %q", p.failures)
		}
		for what, n := range p.expected {
			if n > 0 {
				t.Errorf("the test expected %d more error answers to %s", n, what)
			}
		}
	})
	return p
}

// expect lets the page get one error answer to method and path (a prefix).
func (p *staffPage) expect(method, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected[method+" "+path]++
}

func (p *staffPage) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p *staffPage) text(selector string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		p.t.Fatalf("%s: %v", selector, err)
	}
	return s
}

func eval[T any](p *staffPage, expression string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		p.t.Fatalf("%s: %v", expression, err)
	}
	return v
}

// waitFor waits until the JavaScript condition holds.
func (p *staffPage) waitFor(what, condition string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](condition)); err != nil {
		p.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func row(id string) string { return `#keys tr[data-id="` + id + `"]` }

// rowHas is a condition: the key's row has an element matching selector.
func rowHas(id, selector string) string {
	return fmt.Sprintf(`document.querySelector('%s %s') !== null`, row(id), selector)
}

// actions are the actions the key's row offers.
func (p *staffPage) actions(id string) []string {
	p.t.Helper()
	return eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll('%s td.actions button')].map(b => b.dataset.action)`, row(id)))
}

func (p *staffPage) v1(key string) int {
	p.t.Helper()
	return p.s.Do(p.t, http.MethodGet, "/v1/pets", key, nil).StatusCode
}

// signIn goes from the home page to the staff page and signs in.
func (p *staffPage) signIn() {
	p.t.Helper()
	p.do("home page", chromedp.Navigate(p.s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("pre .api")))
	if got := p.text("pre .api"); got != p.s.URL+"/v1" {
		p.t.Errorf("the home page's example uses %q, want %q", got, p.s.URL+"/v1")
	}
	p.do("sign in", chromedp.Click(chromedp.CSS(`a[href="/staff/"]`)), chromedp.WaitVisible(chromedp.CSS("#signin-form")),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=email]`), "staff@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=password]`), "a long enough password"),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#keys-page")))
	p.waitFor("the first list", `document.querySelector('#status').textContent.includes('updated')`)
}

// issue fills the create form and returns the key the page shows once.
func (p *staffPage) issue(name, perMinute string) (key, id string) {
	p.t.Helper()
	p.do("open the create form", chromedp.Click(chromedp.CSS("#new-key")), chromedp.WaitVisible(chromedp.CSS("#create-dialog")),
		chromedp.SetValue(chromedp.CSS(`#create-form [name=plan]`), "free"),
		chromedp.SendKeys(chromedp.CSS(`#create-form [name=name]`), name))
	if perMinute != "" {
		p.do("own quota", chromedp.SendKeys(chromedp.CSS(`#create-form [name=perMinute]`), perMinute))
	}
	p.do("create", chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#key-value")))
	key = p.text("#key-value")
	r, err := p.s.App.FindFirstRecordByData(apikeys.Collection, apikeys.HashField, apikeys.Hash(key))
	if err != nil {
		p.t.Fatalf("the page showed %q, which is no stored key: %v", key, err)
	}
	return key, r.Id
}

// done closes the key dialog; the key must then be gone from the page.
func (p *staffPage) done(key string) {
	p.t.Helper()
	p.do("close the key", chromedp.Click(chromedp.CSS("#key-done")), chromedp.WaitNotVisible(chromedp.CSS("#key-dialog")))
	html := eval[string](p, `document.documentElement.outerHTML`)
	if strings.Contains(html, key) || strings.Contains(html, key[len(apikeys.Prefix)+8:]) {
		p.t.Errorf("the key is still on the page after Done")
	}
}

// search types into the search box (replacing what was there) and waits
// for the list to answer.
func (p *staffPage) search(q string) {
	p.t.Helper()
	js, err := json.Marshal(q)
	if err != nil {
		p.t.Fatal(err)
	}
	p.afterList("search "+q, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const box = document.querySelector('#search');
		box.value = %s;
		box.dispatchEvent(new Event('input'));
	})()`, js)))
}

// choose selects value in the select and waits for the list to answer.
func (p *staffPage) choose(selector, value string) {
	p.t.Helper()
	p.afterList("choose "+value, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const select = document.querySelector(%q);
		select.value = %q;
		select.dispatchEvent(new Event('change'));
	})()`, selector, value)))
}

// click clicks selector and waits for the list to answer.
func (p *staffPage) click(selector string) {
	p.t.Helper()
	p.afterList("click "+selector, chromedp.Click(chromedp.CSS(selector)))
}

// afterList runs steps and waits until the page has shown the list they
// ask for: every list the page shows rewrites the status line, which is
// blanked first.
func (p *staffPage) afterList(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	p.do(what, append([]chromedp.Action[chromedp.Void]{
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#status').textContent = ''`)}, steps...)...)
	p.waitFor("the list after "+what, `document.querySelector('#status').textContent !== ''`)
}

func (p *staffPage) names() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll('#keys tbody td.name .label')].map(e => e.textContent)`)
}

// look sets the window's width (390: a phone) and colour scheme.
func (p *staffPage) look(width int64, dark bool) {
	p.t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	viewport := chromedp.EmulateViewport(width, 900)
	if width < 500 {
		viewport = chromedp.EmulateViewport(width, 844, chromedp.EmulateMobile)
	}
	p.do("look", viewport)
	_, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	p.waitFor(scheme+" colours", fmt.Sprintf(`matchMedia('(prefers-color-scheme: dark)').matches === %v`, dark))
}

// shots saves full-page screenshots of what is on screen at 1280 and 390
// px, light and dark, after checking at each that nothing needs sideways
// scrolling and that every button on screen is within the width. It comes
// back to 1280 px, light.
func (p *staffPage) shots(name string) {
	p.t.Helper()
	for _, width := range []int64{1280, 390} {
		for _, dark := range []bool{false, true} {
			p.look(width, dark)
			// Two frames: the layout and the chart settle.
			eval[chromedp.Void](p, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`)
			scheme := map[bool]string{false: "light", true: "dark"}[dark]
			overflow := eval[[]int](p, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`)
			if overflow[0] > overflow[1] {
				p.t.Errorf("%s at %d px, %s: the page is %d px wide: it scrolls sideways", name, width, scheme, overflow[0])
			}
			outside := eval[[]string](p, `[...document.querySelectorAll('button, select, input')]
				.filter(e => e.offsetParent !== null || e.closest('dialog[open]'))
				.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.left < 0 || r.right > innerWidth + 0.5); })
				.map(e => e.textContent || e.name || e.id)`)
			if len(outside) > 0 {
				p.t.Errorf("%s at %d px, %s: controls outside the window: %q", name, width, scheme, outside)
			}
			png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
			if err != nil {
				p.t.Fatal(err)
			}
			p.n++
			file := filepath.Join(p.dir, fmt.Sprintf("%02d-%s-%d-%s.png", p.n, name, width, scheme))
			if err := os.WriteFile(file, png, 0o644); err != nil {
				p.t.Fatal(err)
			}
		}
	}
	p.look(1280, false)
}

// A store-staff user, in headless Chromium, signs in on /staff/, issues a key
// and reads it once, is told why a key with a minute above its day is
// refused, rolls a key with a grace period, moves and removes its expiry,
// drives another into a ban and lifts it, reads its use in the chart and its
// history from the audit trail, issues a read-only key and widens it, and
// revokes the first; /v1 answers as each step says, and the page offers only
// what each key's state allows.
func TestStaffPageInChromium(t *testing.T) {
	p := openStaffPage(t)
	p.signIn()
	if got := p.text("#empty"); !strings.Contains(got, "No keys yet") {
		t.Errorf("the empty list says %q", got)
	}
	p.shots("no-keys")

	// Create a key and read it once.
	key, id := p.issue("web shop", "")
	p.shots("new-key-shown-once")
	p.done(key)
	p.waitFor("the new key's row", rowHas(id, ".state-active"))
	if status := p.v1(key); status != http.StatusOK {
		t.Fatalf("the new key on /v1: %d", status)
	}
	if got := p.text(row(id) + " .id code"); got != id {
		t.Errorf("the row shows the id %q, want %q", got, id)
	}
	if got := p.actions(id); !slices.Equal(got, []string{"usage", "change", "expiry", "roll", "revoke"}) {
		t.Errorf("an active key offers %q", got)
	}

	// A minute above the day is refused, with why, and nothing is stored.
	p.expect("POST", "/api/petstore/keys")
	p.do("open the create form", chromedp.Click(chromedp.CSS("#new-key")), chromedp.WaitVisible(chromedp.CSS("#create-dialog")),
		chromedp.SendKeys(chromedp.CSS(`#create-form [name=name]`), "quota mistake"),
		chromedp.SendKeys(chromedp.CSS(`#create-form [name=perMinute]`), "100"),
		chromedp.SendKeys(chromedp.CSS(`#create-form [name=perDay]`), "10"),
		chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)))
	p.waitFor("the refusal", `document.querySelector('#create-form .error').textContent !== ''`)
	if got := p.text("#create-form .error"); !strings.Contains(got, "The per-minute quota, 100 (the key's own), is above the per-day quota, 10") {
		t.Errorf("the create form says %q", got)
	}
	p.shots("create-refused")
	p.do("cancel", chromedp.Click(chromedp.CSS("#create-form .cancel")), chromedp.WaitNotVisible(chromedp.CSS("#create-dialog")))
	if n := p.s.CountRecords(t, apikeys.Collection); n != 1 {
		t.Errorf("%d keys stored, want 1", n)
	}

	// Roll it with a 1-hour grace: old and new both work; the row shows both.
	p.do("roll", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=roll]`)), chromedp.WaitVisible(chromedp.CSS("#roll-dialog")),
		chromedp.Click(chromedp.CSS(`#roll-form input[name=grace][value="3600"]`)),
		chromedp.Click(chromedp.CSS(`#roll-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#key-value")))
	rolled := p.text("#key-value")
	if !strings.HasPrefix(rolled, apikeys.Prefix) || rolled == key {
		t.Fatalf("rolled key %q", rolled)
	}
	p.done(rolled)
	p.waitFor("the old secret in the row", rowHas(id, ".previous"))
	if got := p.text(row(id) + " .previous"); !strings.Contains(got, apikeys.DisplayPrefix(key)) || !strings.Contains(got, "works until") {
		t.Errorf("the row shows the old secret as %q", got)
	}
	if got := p.text(row(id) + " .prefix"); got != apikeys.DisplayPrefix(rolled)+"…" {
		t.Errorf("the row shows the key as %q, want the new prefix", got)
	}
	for name, k := range map[string]string{"old": key, "new": rolled} {
		if status := p.v1(k); status != http.StatusOK {
			t.Errorf("the %s secret during the grace period: %d", name, status)
		}
	}

	// Give it an expiry, then take it away.
	tomorrow := time.Now().Add(24 * time.Hour).Truncate(time.Minute)
	p.do("set an expiry", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=expiry]`)), chromedp.WaitVisible(chromedp.CSS("#expiry-dialog")),
		chromedp.SetValue(chromedp.CSS(`#expiry-form [name=at]`), tomorrow.UTC().Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS(`#expiry-form input[name=mode][value=at]`)))
	if got := p.text("#expiry-now"); got != "Never expires now." {
		t.Errorf("the expiry dialog says %q", got)
	}
	p.shots("expiry-dialog")
	p.do("save the expiry", chromedp.Click(chromedp.CSS(`#expiry-form button[type=submit]`)), chromedp.WaitNotVisible(chromedp.CSS("#expiry-dialog")))
	p.waitFor("the expiry in the row", rowHas(id, ".expires"))
	if stored := p.s.KeyRecord(t, rolled).GetDateTime(apikeys.ExpiresField).Time(); !stored.Equal(tomorrow) {
		t.Errorf("stored expiry %v, want %v", stored, tomorrow)
	}
	p.do("remove the expiry", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=expiry]`)), chromedp.WaitVisible(chromedp.CSS("#expiry-dialog")),
		chromedp.Click(chromedp.CSS(`#expiry-form input[name=mode][value=never]`)),
		chromedp.Click(chromedp.CSS(`#expiry-form button[type=submit]`)), chromedp.WaitNotVisible(chromedp.CSS("#expiry-dialog")))
	p.waitFor("no expiry in the row", "!("+rowHas(id, ".expires")+")")
	if stored := p.s.KeyRecord(t, rolled).GetDateTime(apikeys.ExpiresField); !stored.IsZero() {
		t.Errorf("stored expiry %v after never", stored)
	}

	// Drive a key into a ban through /v1, then lift it from the page.
	greedy, greedyID := p.issue("greedy client", "1")
	p.done(greedy)
	requests, refused := 0, 0
	for {
		r := p.s.Do(t, http.MethodGet, "/v1/pets", greedy, nil)
		requests++
		if r.StatusCode == http.StatusTooManyRequests {
			refused++
		}
		if strings.Contains(string(r.Body), "api_key_banned") {
			break
		}
		if requests > 20 {
			t.Fatalf("no ban after %d requests", requests)
		}
	}
	p.do("refresh", chromedp.Click(chromedp.CSS("#refresh")))
	p.waitFor("the banned state", rowHas(greedyID, ".state-banned"))
	if got := p.text(row(greedyID) + " .state-cell"); !strings.HasPrefix(got, "banned\nuntil ") || !strings.HasSuffix(got, "Lift ban") {
		t.Errorf("banned key's state reads %q", got)
	}
	if got, want := p.text(row(greedyID)+" .today"), fmt.Sprintf("%d of 1,000 · %d refused", requests-refused, refused); !strings.Contains(got, want) {
		t.Errorf("today reads %q, want %q", got, want)
	}
	p.do("lift the ban", chromedp.Click(chromedp.CSS(row(greedyID)+` button[data-action="lift ban"]`)))
	p.waitFor("the active state", rowHas(greedyID, ".state-active"))
	if status := p.v1(greedy); status != http.StatusOK {
		t.Fatalf("after lifting the ban: %d, want 200", status)
	}
	requests++

	// The by-day chart, drawn by the page, shows today's count in its last
	// of 90 days.
	p.do("usage", chromedp.Click(chromedp.CSS(row(greedyID)+` button[data-action=usage]`)), chromedp.WaitVisible(chromedp.CSS("#usage-days svg")))
	today, err := chromedp.Run(p.ctx, chromedp.Poll[[]int](`(() => {
		const days = document.querySelectorAll('#usage-days svg g');
		const g = days[days.length - 1];
		return days.length === 90 && g.dataset.period === new Date().toISOString().slice(0, 10) &&
			[g.dataset.requests - g.dataset.limited, +g.dataset.limited, g.querySelectorAll('rect').length];
	})()`))
	if err != nil {
		t.Fatalf("the chart: %v", err)
	}
	if want := []int{requests - refused, refused, 2}; !slices.Equal(today, want) {
		t.Errorf("today's bar (served, refused, bars) = %v, want %v", today, want)
	}
	if got := eval[string](p, `document.querySelector('#usage-days figcaption').textContent`); !strings.HasPrefix(got, "Last 90 days by day (UTC)") ||
		!strings.Contains(got, fmt.Sprintf(": %d requests", requests)) {
		t.Errorf("the chart's caption reads %q", got)
	}
	if got, want := p.text("#usage-today"), fmt.Sprintf("%d requests, %d refused", requests, refused); !strings.Contains(got, want) {
		t.Errorf("today's total reads %q, want %q", got, want)
	}
	// Beside it, the key's history from the audit trail, newest first.
	p.waitFor("the history", `document.querySelectorAll('#history li').length === 3`)
	history := eval[[]string](p, `[...document.querySelectorAll('#history li')].map(li => li.textContent)`)
	for i, want := range []string{"Ban lifted by staff@example.com from 127.0.0.1", "Banned by the service", "Issued by staff@example.com from 127.0.0.1"} {
		if !strings.Contains(history[i], want) {
			t.Errorf("history entry %d reads %q, want %q", i, history[i], want)
		}
	}
	if !strings.Contains(history[2], "plan: free") || !strings.Contains(history[2], "per minute: 1") {
		t.Errorf("the issue's details read %q", history[2])
	}
	if got := p.text("#history-count"); got != "· 3 of 3 changes, newest first" {
		t.Errorf("the history's count reads %q", got)
	}
	p.shots("usage-chart")
	// The charts are the page's own: of the vendored scripts, only
	// PocketBase's SDK is loaded.
	for _, src := range eval[[]string](p, `[...document.scripts].map(s => new URL(s.src).pathname)`) {
		if strings.HasPrefix(src, "/staff/vendor/") && src != "/staff/vendor/pocketbase/pocketbase.umd.js" {
			t.Errorf("the page loads a third-party script: %s", src)
		}
	}

	// A read-only key: chosen at issue, marked with a badge, refused on
	// create; widened later, it creates from its next request on.
	p.do("open the create form", chromedp.Click(chromedp.CSS("#new-key")), chromedp.WaitVisible(chromedp.CSS("#create-dialog")),
		chromedp.SetValue(chromedp.CSS(`#create-form [name=plan]`), "free"),
		chromedp.SendKeys(chromedp.CSS(`#create-form [name=name]`), "shop window"),
		chromedp.Click(chromedp.CSS(`#create-form input[name=scopes][value="pets:write"]`)))
	p.shots("create-read-only")
	p.do("create", chromedp.Click(chromedp.CSS(`#create-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#key-value")))
	display := p.text("#key-value")
	p.done(display)
	displayID := p.s.KeyRecord(t, display).Id
	p.waitFor("the read-only badge", rowHas(displayID, ".scope-badge"))
	if got := p.text(row(displayID) + " .scope-badge"); got != "read only" {
		t.Errorf("the read-only key's badge reads %q", got)
	}
	p.shots("read-only-badge")
	if status := p.v1(display); status != http.StatusOK {
		t.Errorf("a read-only key lists: %d", status)
	}
	junk := map[string]any{"name": "Junk", "categoryId": 1}
	apptest.ExpectError(t, p.s.Do(t, http.MethodPost, "/v1/pets", display, junk), http.StatusForbidden, "insufficient_scope")
	p.do("change", chromedp.Click(chromedp.CSS(row(displayID)+` button[data-action=change]`)), chromedp.WaitVisible(chromedp.CSS("#edit-dialog")))
	if got := eval[[]string](p, `[...document.querySelectorAll('#edit-form input[name=scopes]:checked')].map(b => b.value)`); !slices.Equal(got, []string{"pets:read"}) {
		t.Errorf("the change dialog ticks %q, want pets:read alone", got)
	}
	p.shots("change-scopes")
	p.do("widen", chromedp.Click(chromedp.CSS(`#edit-form input[name=scopes][value="pets:write"]`)),
		chromedp.Click(chromedp.CSS(`#edit-form button[type=submit]`)), chromedp.WaitNotVisible(chromedp.CSS("#edit-dialog")))
	p.waitFor("no badge", "!("+rowHas(displayID, ".scope-badge")+")")
	if r := p.s.Do(t, http.MethodPost, "/v1/pets", display, junk); r.StatusCode != http.StatusCreated {
		t.Errorf("the widened key creates: %d %s", r.StatusCode, r.Body)
	}

	// Revoke, confirmed: the next request is refused, and the row offers
	// nothing but its use.
	p.do("revoke", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=revoke]`)), chromedp.WaitVisible(chromedp.CSS("#revoke-dialog")))
	if got := p.text("#revoke-dialog"); !strings.Contains(got, "This cannot be undone") {
		t.Errorf("the revoke dialog says %q", got)
	}
	p.do("confirm", chromedp.Click(chromedp.CSS(`#revoke-form button[type=submit]`)))
	p.waitFor("the revoked state", rowHas(id, ".state-revoked"))
	for _, k := range []string{rolled, key} {
		if status := p.v1(k); status != http.StatusUnauthorized {
			t.Errorf("a revoked key on /v1: %d, want 401", status)
		}
	}
	if got := p.actions(id); !slices.Equal(got, []string{"usage"}) {
		t.Errorf("a revoked key offers %q, want only usage", got)
	}

	// An expired key is not offered a roll, but a later expiry.
	soon := time.Now().Add(time.Second)
	expiring := p.s.NewKey(t, apikeys.NewKey{Name: "short lived", Expires: soon})
	expiringID := p.s.KeyRecord(t, expiring).Id
	time.Sleep(time.Until(soon))
	p.do("refresh", chromedp.Click(chromedp.CSS("#refresh")))
	p.waitFor("the expired state", rowHas(expiringID, ".state-expired"))
	if got := p.actions(expiringID); !slices.Equal(got, []string{"usage", "change", "expiry", "revoke"}) {
		t.Errorf("an expired key offers %q", got)
	}
	p.shots("states")
}

// The page with 10,000 keys: one page at a time, paged, sorted, searched
// and filtered by the server, with counts that say what is shown; a whole
// key pasted finds its key; ids are copied with a click; on a phone the
// rows are cards, and nothing scrolls sideways; dark mode is honoured.
func TestStaffPageWithTenThousandKeys(t *testing.T) {
	p := openStaffPage(t)
	const n = 10_000
	keys := p.s.SeedKeys(t, n, "store")
	p.signIn()

	if got := p.text("#status"); !strings.HasPrefix(got, "1–50 of 10,000 keys shown") {
		t.Errorf("status %q", got)
	}
	if got := len(p.names()); got != 50 {
		t.Errorf("%d rows, want a page of 50", got)
	}
	if got := p.names()[0]; got != fmt.Sprintf("store %d", n-1) {
		t.Errorf("first row %q, want the newest key", got)
	}
	if got := p.text("#page-at"); got != "Page 1 of 200" {
		t.Errorf("pager %q", got)
	}
	p.click("#page-last")
	if got, names := p.text("#status"), p.names(); !strings.HasPrefix(got, "9,951–10,000 of 10,000 keys shown") || names[len(names)-1] != "store 0" {
		t.Errorf("last page: %q, rows %q…", got, names[:3])
	}
	p.click("#page-prev")
	if got := p.text("#page-at"); got != "Page 199 of 200" {
		t.Errorf("pager %q after Previous", got)
	}

	// Searches go back to the first page and find what staff have in hand.
	for _, c := range []struct {
		search, status string
		names          []string
	}{
		{keys[4321], "1 of 1 matching (10,000 keys in all) shown", []string{"store 4321"}},
		{"  " + keys[17] + " ", "1 of 1 matching", []string{"store 17"}},
		{"seed00000000777", "1 of 1 matching", []string{"store 777"}},
		{apikeys.DisplayPrefix(keys[9000]) + "…", "1 of 1 matching", []string{"store 9000"}},
		{"STORE 999", "of 11 matching", []string{"store 9999", "store 9998", "store 9997"}},
		{apikeys.Prefix + "NoSuchKeyNoSuchKeyNoSuchKeyNoSuchKeyNoSuchKe", "0 of 0 matching", nil},
	} {
		p.search(c.search)
		got := p.names()
		if status := p.text("#status"); !strings.Contains(status, c.status) || len(got) < len(c.names) || !slices.Equal(got[:len(c.names)], c.names) {
			t.Errorf("search %q: %q, rows %q; want %q, rows from %q", c.search, status, got, c.status, c.names)
		}
	}
	if got := p.text("#empty"); got != "No keys match." {
		t.Errorf("nothing found says %q", got)
	}
	p.search("")

	// Filter and order.
	p.choose("#filter-state", "revoked")
	if got := p.text("#status"); !strings.HasPrefix(got, "1–50 of 1,000 matching (10,000 keys in all) shown") {
		t.Errorf("revoked: %q", got)
	}
	p.choose("#filter-state", "expired")
	p.choose("#sort", "name")
	if got, want := p.names(), []string{"store 1002", "store 1012", "store 102"}; !slices.Equal(got[:3], want) {
		t.Errorf("expired, by name: %q, want %q first", got[:3], want)
	}
	p.choose("#filter-state", "")
	p.choose("#sort", "-created")

	// The id is copied with a click.
	_, err := chromedp.CallBrowser(p.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-write", AllowWithoutSanitization: true},
		Setting:    browser.PermissionSettingGranted, Origin: p.s.URL,
	})
	if err == nil {
		_, err = chromedp.CallBrowser(p.ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: "clipboard-read", AllowWithoutSanitization: true},
			Setting:    browser.PermissionSettingGranted, Origin: p.s.URL,
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf("seed%011d", n-1)
	p.do("copy the id", chromedp.Click(chromedp.CSS(row(first)+" .copy-id")))
	p.waitFor("Copied", fmt.Sprintf(`document.querySelector('%s .copy-id').textContent === 'Copied'`, row(first)))
	copied, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil || copied != first {
		t.Errorf("the clipboard holds %q (%v), want the id %q", copied, err, first)
	}

	// The use of one key, then the whole page at every size and scheme.
	p.do("usage", chromedp.Click(chromedp.CSS(row(first)+` button[data-action=usage]`)), chromedp.WaitVisible(chromedp.CSS("#usage-days svg")))
	p.waitFor("the chart", `document.querySelectorAll('#usage-days svg g').length === 90`)
	p.shots("ten-thousand-keys")

	// On a phone: cards, with labels, and every action at hand.
	p.look(390, false)
	layout := eval[map[string]string](p, fmt.Sprintf(`(() => {
		const tr = document.querySelector('%s');
		const cell = tr.querySelector('td.plan');
		return {head: getComputedStyle(document.querySelector('#keys thead')).display, row: getComputedStyle(tr).display,
			label: getComputedStyle(cell, '::before').content};
	})()`, row(first)))
	if layout["head"] != "none" || layout["row"] != "grid" || layout["label"] != `"Plan"` {
		t.Errorf("at 390 px: %v; want no table head, rows as cards (grids), cells labelled", layout)
	}
	p.look(1280, true)
	colours := eval[[]string](p, `[getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]`)
	if colours[0] != "rgb(17, 20, 24)" || colours[1] != "rgb(227, 231, 236)" {
		t.Errorf("dark: background and text %q, want dark with light text", colours)
	}
	p.look(1280, false)

	// Dialogs on a phone, light and dark.
	p.do("open the create form", chromedp.Click(chromedp.CSS("#new-key")), chromedp.WaitVisible(chromedp.CSS("#create-dialog")))
	p.shots("create-dialog")
	p.do("cancel", chromedp.Click(chromedp.CSS("#create-form .cancel")))
}
