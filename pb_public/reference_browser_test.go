package pbpublic_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/internal/apptest"
)

const chromium = "/usr/bin/chromium" // Debian's package

// The reference page, reached from the home page, renders the served
// contract in a real browser without anything from outside the service.
func TestReferencePageInChromium(t *testing.T) {
	requireChromium(t)
	s := apptest.Start(t, "")
	ctx := newBrowser(t)

	// What the page sends outside the service, what fails, and its uncaught
	// errors. The CSP stops requests before they leave the browser.
	var mu sync.Mutex
	foreign := map[network.RequestID]string{}
	var failures []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
				foreign[ev.RequestID] = u
			}
		case *network.EventLoadingFailed:
			if ev.BlockedReason == network.BlockedReasonCsp {
				delete(foreign, ev.RequestID)
			}
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				failures = append(failures, fmt.Sprintf("%s: %d", ev.Response.URL, ev.Response.Status))
			}
		case *runtime.EventExceptionThrown:
			failures = append(failures, ev.ExceptionDetails.Text)
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}

	operations := []string{"listPets", "createPet", "getPet"}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(s.URL + "/"),
		chromedp.Click(chromedp.CSS(`a[href="/docs/"]`)),
	}
	for _, op := range operations {
		steps = append(steps, chromedp.WaitReady(chromedp.CSS(`[data-section-id="operation/`+op+`"] h2`)))
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("the three operations did not render: %v", err)
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

	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 {
		t.Errorf("the page sent requests outside the service: %q", slices.Collect(maps.Values(foreign)))
	}
	if len(failures) > 0 {
		t.Errorf("failures in the page: %q", failures)
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
