package pbpublic_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"petstore/testkit/apptest"
)

// Staff add a webhook endpoint on the staff page, read its secret once,
// send a test event that a receiver verifies, see the delivery, resend a
// failed event, pause the endpoint and read its history.
func TestStaffPageWebhooksInChromium(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r)
		bodies = append(bodies, body)
		mu.Unlock()
		w.Write([]byte("thanks"))
	}))
	defer rcv.Close()
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}

	p := openStaffPageWith(t, apptest.Config{WebhooksAllowPrivate: true})
	p.signIn()
	p.waitFor("the webhooks section", `!document.querySelector('#webhooks').hidden`)

	p.do("add an endpoint", chromedp.Click(chromedp.CSS("#new-webhook")), chromedp.WaitVisible(chromedp.CSS("#webhook-dialog")),
		chromedp.SendKeys(chromedp.CSS(`#webhook-form [name=url]`), rcv.URL+"/hook"),
		chromedp.SendKeys(chromedp.CSS(`#webhook-form [name=description]`), "the shop"),
		chromedp.Click(chromedp.CSS(`#webhook-form button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#secret-value")))
	secret := p.text("#secret-value")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the page shows the secret %q", secret)
	}
	p.shots("webhook-secret-shown-once")
	p.do("close the secret", chromedp.Click(chromedp.CSS("#secret-done")), chromedp.WaitNotVisible(chromedp.CSS("#secret-dialog")))
	if html := eval[string](p, `document.documentElement.outerHTML`); strings.Contains(html, secret[6:]) {
		t.Error("the secret is still on the page after Done")
	}
	p.waitFor("the endpoint's row", `document.querySelector('#webhooks-list tbody tr td.events')?.textContent === 'pet.created'`)
	// Times on the page are UTC, the list's reading time too.
	p.waitFor("the list's time in UTC", `/^1 endpoint · updated \d\d:\d\d:\d\d UTC$/.test(document.querySelector('#webhooks-status').textContent)`)

	p.do("send a test event", chromedp.Click(chromedp.CSS(`#webhooks-list button[data-action=test]`)))
	p.waitFor("the test event's delivery", `document.querySelector('#webhooks-status').textContent.includes('on its way')`)
	for i := 0; received() == 0 && i < 100; i++ {
		p.do("wait", chromedp.Sleep(100e6))
	}
	if received() != 1 {
		t.Fatalf("the receiver got %d deliveries, want 1", received())
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if err := wh.Verify(bodies[0], got[0].Header); err != nil || !strings.Contains(string(bodies[0]), `"type":"webhook.test"`) {
		t.Errorf("delivery %s: %v", bodies[0], err)
	}
	mu.Unlock()

	p.do("show the deliveries", chromedp.Click(chromedp.CSS(`#webhooks-list button[data-action=attempts]`)))
	// One check of both: the list may be drawn again between two reads.
	p.waitFor("the delivery's row, its status and the answer's first bytes",
		`document.querySelector('#attempts-list tbody tr td.answer')?.textContent === '200' &&
		 document.querySelector('#attempts-list code.response')?.textContent === 'thanks'`)
	p.shots("webhook-deliveries")

	// A failed event gets a Resend button, which sends it again.
	if _, err := p.s.App.DB().NewQuery("UPDATE webhook_events SET status = 'failed'").Execute(); err != nil {
		t.Fatal(err)
	}
	p.do("show the deliveries again", chromedp.Click(chromedp.CSS(`#webhooks-list button[data-action=attempts]`)))
	p.waitFor("the resend button", `document.querySelector('#attempts-list button[data-action=resend]') !== null`)
	// Found and clicked in one step: the list may be drawn again between
	// the two of a chromedp.Click, whose node is then gone.
	p.do("resend", chromedp.Evaluate[chromedp.Void](`document.querySelector('#attempts-list button[data-action=resend]').click()`))
	for i := 0; received() < 2 && i < 100; i++ {
		p.do("wait", chromedp.Sleep(100e6))
	}
	if received() != 2 {
		t.Fatalf("the receiver got %d deliveries after the resend, want 2", received())
	}

	p.do("pause", chromedp.Click(chromedp.CSS(`#webhooks-list button[data-action=pause]`)))
	p.waitFor("the paused state", `document.querySelector('#webhooks-list td.state-cell')?.textContent.startsWith('paused')`)
	p.shots("webhook-paused")

	// The endpoint's history: each change, newest first, by whom, with the
	// values before and after; never the secret.
	p.do("show the history", chromedp.Click(chromedp.CSS(`#webhooks-list button[data-action=history]`)))
	p.waitFor("the history", `document.querySelectorAll('#webhook-history li').length === 4`)
	actions := eval[[]string](p, `[...document.querySelectorAll('#webhook-history li')].map((li) => li.dataset.action)`)
	if strings.Join(actions, " ") != "webhook.changed webhook.event_resent webhook.test_sent webhook.created" {
		t.Errorf("the history's actions: %v", actions)
	}
	if got := p.text("#webhook-history li:first-child"); !strings.Contains(got, "Changed by staff@example.com") || !strings.Contains(got, "paused: no → yes") {
		t.Errorf("the pause in the history: %q", got)
	}
	if got := p.text("#webhook-history li:last-child"); !strings.Contains(got, "Added by staff@example.com") || !strings.Contains(got, "URL: "+rcv.URL+"/hook") ||
		!strings.Contains(got, "description: the shop") {
		t.Errorf("the addition in the history: %q", got)
	}
	if got := p.text("#webhook-history-count"); got != "· 4 of 4 changes, newest first" {
		t.Errorf("the history's count: %q", got)
	}
	if html := eval[string](p, `document.documentElement.outerHTML`); strings.Contains(html, secret[6:]) {
		t.Error("the history shows the secret")
	}
	p.shots("webhook-history")
}

// A receiver on this machine is refused on a server without
// --webhooks-allow-private, and the staff page's dialog says to start serve
// with that flag.
func TestStaffPageSaysHowToAllowALocalWebhook(t *testing.T) {
	p := openStaffPage(t)
	p.signIn()
	p.waitFor("the webhooks section", `!document.querySelector('#webhooks').hidden`)
	p.expect("POST", "/api/petstore/webhooks")
	p.do("add an endpoint on loopback", chromedp.Click(chromedp.CSS("#new-webhook")), chromedp.WaitVisible(chromedp.CSS("#webhook-dialog")),
		chromedp.SendKeys(chromedp.CSS(`#webhook-form [name=url]`), "http://127.0.0.1:9000/"),
		chromedp.Click(chromedp.CSS(`#webhook-form button[type=submit]`)))
	p.waitFor("the refusal", `document.querySelector('#webhook-form .error').textContent !== ''`)
	if got := p.text("#webhook-form .error"); !strings.Contains(got, "start serve with --webhooks-allow-private") {
		t.Errorf("the dialog says %q; want it to say to start serve with --webhooks-allow-private", got)
	}
}
