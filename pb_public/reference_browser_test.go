package pbpublic_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/internal/limits"
	"petstore/testkit/apptest"
)

const chromium = "/usr/bin/chromium" // Debian's package

// placeholderHost matches the hosts documentation uses as stand-ins, which
// no client should ever be sent to.
var placeholderHost = regexp.MustCompile(`(?i)\bexample\.(com|org|net)\b`)

// The reference page, reached from the home page, renders the served
// contract in a real browser without anything from outside the service. Each
// operation names the service's own address as its first server and has a
// copyable curl example that calls it; no placeholder host appears.
func TestReferencePageInChromium(t *testing.T) {
	requireChromium(t)
	s := apptest.Start(t, "")
	ctx := newBrowser(t)
	page := watchPage(t, ctx, s.URL)

	operations := []string{"listPets", "createPet", "getPet", "listCategories"}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(s.URL + "/"),
		chromedp.Click(chromedp.CSS(`a[href="/docs/"]`)),
	}
	if err := chromedp.Do(ctx, append(steps, waitForOperations(operations)...)...); err != nil {
		t.Fatalf("the operations did not render: %v", err)
	}

	text := func(selector string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
		if err != nil {
			t.Fatalf("%s: %v", selector, err)
		}
		return s
	}
	if got := text(`[data-section-id="operation/listPets"] h2`); !strings.Contains(got, "List animals") {
		t.Errorf("listPets heading %q", got)
	}
	// The beta operation shows its stability (x-stability, as Redoc's x-badges).
	if got := text(`[data-section-id="operation/listCategories"] h2`); !strings.Contains(got, "Beta") {
		t.Errorf("listCategories heading %q is not marked Beta", got)
	}
	if got := text(`[data-section-id="operation/getPet"] h2`); !strings.Contains(got, "Deprecated") {
		t.Errorf("getPet heading %q is not marked deprecated", got)
	}
	if got := text(`[data-section-id="section/Authentication"]`); !strings.Contains(got, "HTTP Authorization Scheme: bearer") {
		t.Errorf("the authentication section does not show the bearer scheme: %q", got)
	}

	plans, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll(
		'[data-section-id="section/Plans-and-rate-limits"] table tr')].map(tr => [...tr.cells].map(c => c.innerText.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"Plan", "Requests per minute", "Requests per day"},
		{"Free", "60", "1,000"},
		{"Pro", "300", "10,000"},
		{"Business", "1,000", "100,000"},
		{"Enterprise", "custom, per key", "custom, per key"},
	}
	if !slices.EqualFunc(plans, want, slices.Equal) {
		t.Errorf("plans table %q, want %q", plans, want)
	}

	base := s.URL + "/v1"
	for _, op := range append(operations, "getOpenAPIDocument", "getOpenAPIDocumentYAML") {
		section := `[data-section-id="operation/` + op + `"]`
		// Redoc lists the servers under the operation's method and path,
		// shown on a click, and the samples in tabs.
		// The clicks are the elements' own (click()), not the mouse's at
		// coordinates, which a slow machine's layout may move away from
		// before the press lands.
		endpoint := section + ` button:has(.http-verb)`
		curlTab := `[...document.querySelectorAll('` + section + ` [role="tab"]')].find(t => t.innerText.trim() == "curl")`
		if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(endpoint)),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('`+endpoint+`').click()`),
			chromedp.WaitVisible(chromedp.CSS(endpoint+` + * [role="button"]`)),
			chromedp.Evaluate[chromedp.Void](curlTab+`.click()`), chromedp.WaitVisible(chromedp.CSS(section+` [role="tabpanel"] pre`))); err != nil {
			t.Fatalf("%s: the servers or the curl sample do not show: %v", op, err)
		}
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
			Servers []string
			Sample  string
			Copy    bool
		}](fmt.Sprintf("(%s)(%q)", readOperation, section)))
		if err != nil {
			t.Fatal(err)
		}
		if len(shown.Servers) == 0 || !strings.HasPrefix(shown.Servers[0], base+"/") {
			t.Errorf("%s: servers %q; want %s first", op, shown.Servers, base)
		}
		if !strings.HasPrefix(shown.Sample, "curl ") || !strings.Contains(shown.Sample, `"`+base+"/") || !shown.Copy {
			t.Errorf("%s: curl sample %q (a Copy button: %v); want one calling %s, with a Copy button", op, shown.Sample, shown.Copy, base)
		}
	}
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	if m := placeholderHost.FindString(html); m != "" {
		t.Errorf("the page names %s", m)
	}

	// The screenshot shows getPet, its deprecation, and the operations in the
	// sidebar, which Redoc expands as the page scrolls.
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(`[data-section-id="operation/getPet"] h2`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-item-id="tag/pets/operation/getPet"]`))); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp("", "petstore-reference-*.png")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(png); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the reference page: %s", f.Name())

	page.check(t)
}

// The page renders for a visitor whose address has used its keyless quota
// (behind a shared NAT, every visitor): it reads an uncounted copy of the
// contract, while /v1/openapi.json stays limited for tools.
func TestReferencePageRendersOverTheAddressLimit(t *testing.T) {
	requireChromium(t)
	// A window that outlasts the test, so that the address stays limited.
	s := apptest.StartWith(t, apptest.Config{Limits: limits.Config{MinuteWindow: time.Hour}})
	limited := func() bool {
		r := s.Do(t, http.MethodGet, "/v1/openapi.json", "", nil)
		return r.StatusCode == http.StatusTooManyRequests
	}
	for i := 0; !limited(); i++ {
		if i == limits.DefaultAnonymousPerMinute {
			t.Fatalf("no 429 after %d keyless requests", i+1)
		}
	}

	ctx := newBrowser(t)
	page := watchPage(t, ctx, s.URL)
	steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(s.URL + "/docs/")}
	if err := chromedp.Do(ctx, append(steps, waitForOperations([]string{"listPets", "createPet", "getPet"})...)...); err != nil {
		t.Fatalf("the operations did not render for a limited address: %v", err)
	}
	page.check(t)
	if !limited() {
		t.Errorf("/v1/openapi.json is no longer limited for the address: the test proves nothing")
	}
}

func requireChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests are skipped")
	}
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("PETSTORE_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%v: install Debian's chromium and chromium-driver (.ci/run does)", err)
		}
		t.Skipf("%v: install Debian's chromium to run this test (CI requires it)", err)
	}
}

// readOperation reads, in an operation's section that shows its servers and
// its curl sample, the servers' addresses, the sample and whether a Copy
// button is beside it.
const readOperation = `(selector) => {
	const s = document.querySelector(selector);
	const panel = s.querySelector('[role="tabpanel"]:has(pre)');
	return {
		servers: [...s.querySelector('button:has(.http-verb)').nextElementSibling.querySelectorAll('[role="button"]')].map(e => e.textContent.trim()),
		sample: panel.querySelector('pre').innerText,
		copy: [...panel.querySelectorAll('button')].some(b => b.innerText.trim() == 'Copy'),
	};
}`

// waitForOperations waits until the operations' headings render.
func waitForOperations(operations []string) []chromedp.Action[chromedp.Void] {
	var steps []chromedp.Action[chromedp.Void]
	for _, op := range operations {
		steps = append(steps, chromedp.WaitReady(chromedp.CSS(`[data-section-id="operation/`+op+`"] h2`)))
	}
	return steps
}

// pageWatch records what a page asks for outside the service, what fails
// (any answer of 400 or more included), and its uncaught errors. A request
// the page's CSP blocks counts as one outside the service: the page asked,
// and the browser's console shows the refusal.
type pageWatch struct {
	mu       sync.Mutex
	requests int
	foreign  []string
	failures []string
}

func watchPage(t *testing.T, ctx context.Context, base string) *pageWatch {
	t.Helper()
	w := &pageWatch{}
	err := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			w.requests++
			u := ev.Request.URL
			if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				w.foreign = append(w.foreign, u)
			}
		case *network.EventLoadingFailed:
			if ev.BlockedReason != "" {
				w.failures = append(w.failures, fmt.Sprintf("blocked (%s): request %s", ev.BlockedReason, ev.RequestID))
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				w.failures = append(w.failures, fmt.Sprintf("%s: %d", ev.Response.URL, ev.Response.Status))
			}
		case *runtime.EventExceptionThrown:
			w.failures = append(w.failures, ev.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return w
}

func (w *pageWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.foreign) > 0 {
		t.Errorf("the page asked for addresses outside the service: %q", w.foreign)
	}
	if len(w.failures) > 0 {
		t.Errorf("failures in the page: %q", w.failures)
	}
}

// newBrowser starts a headless Chromium with a fresh profile, closed with the
// test. The flags keep it from calling home, which the closed network would
// answer with floods of refused connections.
func newBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		// The pages' numbers and dates in one locale, whatever the machine's.
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1400),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	return ctx
}
