package pbpublic_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
	"petstore/testkit/apptest"
)

// The home page fits a phone (390 px) without sideways scrolling, light and
// dark, takes its colours from the visitor's scheme, names the address it was
// served from, and asks nothing of anyone else.
func TestHomePageInChromium(t *testing.T) {
	requireChromium(t)
	const publicURL = "https://shop.example.org/api/v1"
	s := apptest.StartWith(t, apptest.Config{PublicURL: publicURL})
	ctx := newBrowser(t)
	page := watchPage(t, ctx, s.URL)
	shots := screenshotDir(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`pre`))); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{1280, 390} {
		for _, dark := range []bool{false, true} {
			look(t, ctx, width, dark)
			checkWidth(t, ctx, "/", width, dark)
			// The background's luminance, 0 (black) to 255 (white).
			lum, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
				const [r, g, b] = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
				return 0.2126 * r + 0.7152 * g + 0.0722 * b;
			})()`))
			if err != nil {
				t.Fatal(err)
			}
			if dark != (lum < 80) {
				t.Errorf("at %d px, dark %v: the background's luminance is %.0f", width, dark, lum)
			}
			screenshot(t, ctx, shots, "home", width, dark)
		}
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.origin')].map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range got {
		if text != s.URL {
			t.Errorf("the page says it is served at %q, want %s", text, s.URL)
		}
	}
	// The API's address is the public one, read from the document.
	var apis []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if apis, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.api')].map(e => e.textContent)`)); err != nil {
			t.Fatal(err)
		}
		if len(apis) == 3 && !slices.ContainsFunc(apis, func(a string) bool { return a != publicURL }) {
			break
		}
	}
	if len(apis) != 3 || slices.ContainsFunc(apis, func(a string) bool { return a != publicURL }) {
		t.Errorf("the page names the API %q, want %s three times", apis, publicURL)
	}
	page.check(t)
}

// The reference page sends no request outside the service, not even one
// its Content-Security-Policy would block (Redoc's bundle shows a logo from
// its CDN unless patched, see docs/staff.md), and fits a phone, light and
// dark.
func TestReferencePageStaysHome(t *testing.T) {
	requireChromium(t)
	s := apptest.Start(t, "")
	ctx := newBrowser(t)
	page := watchPage(t, ctx, s.URL)
	shots := screenshotDir(t)
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(s.URL + "/docs/")}
	if err := chromedp.Do(ctx, append(steps, waitForOperations([]string{"listPets", "createPet", "getPet"})...)...); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{1280, 390} {
		for _, dark := range []bool{false, true} {
			look(t, ctx, width, dark)
			checkWidth(t, ctx, "/docs/", width, dark)
			screenshot(t, ctx, shots, "docs", width, dark)
		}
	}
	page.check(t)
	if page.requests == 0 {
		t.Fatal("no request recorded: the watch proves nothing")
	}
}

// look sets the window's width (under 500 px, a phone's) and the colour
// scheme the page sees, and waits two frames for the layout to settle.
func look(t *testing.T, ctx context.Context, width int64, dark bool) {
	t.Helper()
	viewport := chromedp.EmulateViewport(width, 900)
	if width < 500 {
		viewport = chromedp.EmulateViewport(width, 844, chromedp.EmulateMobile)
	}
	scheme := map[bool]string{false: "light", true: "dark"}[dark]
	if err := chromedp.Do(ctx, viewport); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`)); err != nil {
		t.Fatal(err)
	}
}

// checkWidth fails the test when the page is wider than the window: it
// would scroll sideways.
func checkWidth(t *testing.T, ctx context.Context, path string, width int64, dark bool) {
	t.Helper()
	w, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, innerWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	if int64(w[1]) != width || int64(w[0]) > width {
		t.Errorf("%s at %d px, dark %v: the page is %d px wide in a window of %d", path, width, dark, w[0], w[1])
	}
}

// screenshotDir is where a test saves its screenshots, outside the
// repository; the test names it in its log.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "petstore-pages-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", dir)
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string, width int64, dark bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	scheme := map[bool]string{false: "light", true: "dark"}[dark]
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d-%s.png", name, width, scheme)), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// In a browser whose time zone is not UTC, the staff page shows every time
// in UTC with its date (a ban's end, an expiry, an old secret's end), as its
// columns and the day quota count, and a quota the key takes from its plan
// as "Plan's (60)", not 0.
func TestStaffPageTimesAndPlanQuotas(t *testing.T) {
	p := openStaffPage(t)
	if _, err := chromedp.Call(p.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Los_Angeles"}); err != nil {
		t.Fatal(err)
	}
	banned := p.s.NewKey(t, apikeys.NewKey{Plan: "free", Name: "banned"})
	bannedID := p.s.KeyRecord(t, banned).Id
	// Late in the UTC day: a local time without its date would read as
	// another day in Los Angeles.
	until := time.Now().UTC().Add(24 * time.Hour).Truncate(24 * time.Hour).Add(23*time.Hour + 47*time.Minute)
	if err := apikeys.SaveBan(p.s.App, bannedID, until); err != nil {
		t.Fatal(err)
	}
	expires := until.Add(time.Hour)
	own := p.s.NewKey(t, apikeys.NewKey{Plan: "free", Name: "own", PerMinute: 5, Expires: expires})
	ownID := p.s.KeyRecord(t, own).Id

	p.signIn()
	if got := eval[string](p, `Intl.DateTimeFormat().resolvedOptions().timeZone`); got != "America/Los_Angeles" {
		t.Fatalf("the browser's time zone is %s", got)
	}
	for _, c := range []struct{ selector, want string }{
		{row(bannedID) + " .until", "until " + until.Format("2006-01-02 15:04") + " UTC"},
		{row(ownID) + " .expires", "expires " + expires.Format("2006-01-02 15:04") + " UTC"},
		{row(bannedID) + " .per-minute", "Plan's (60)"},
		{row(bannedID) + " .per-day", "Plan's (1,000)"},
		{row(ownID) + " .per-minute", "5own"}, // "own" is a badge beside the number
		{row(ownID) + " .per-day", "Plan's (1,000)"},
	} {
		if got := p.text(c.selector); got != c.want {
			t.Errorf("%s reads %q, want %q", c.selector, got, c.want)
		}
	}
	p.shots("utc-and-plan-quotas")
}
