package pbpublic_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/customers"
)

// Staff, on the staff page in Chromium at 1280 and 390 px, light and dark,
// see the day windows near their quota today and the top customers this
// month: Acme, whose three keys share a window of 10 a day and used 8 of
// it, and Globex's key web, 9 of its own 10 (Globex: 10 requests this
// month, its first); then Acme's keys with its last 48 hours and 90 days,
// drawn by the page in the scheme's colours.
func TestStaffPageUseInChromium(t *testing.T) {
	p := openStaffPage(t)
	plan, err := p.s.App.FindFirstRecordByData(apikeys.PlansCollection, "name", "pro")
	if err != nil {
		t.Fatal(err)
	}
	plan.Set("counted", "customer")
	plan.Set("per_minute", 10)
	plan.Set("per_day", 10)
	if err := p.s.App.Save(plan); err != nil {
		t.Fatal(err)
	}
	customer := func(name, plan string, keys ...apikeys.NewKey) (string, []string) {
		t.Helper()
		c, err := customers.Create(p.s.App, customers.Input{Name: &name, Plan: &plan}, audit.CLI)
		if err != nil {
			t.Fatal(err)
		}
		var issued []string
		for _, nk := range keys {
			key := p.s.NewKey(t, nk)
			if _, err := customers.Assign(p.s.App, p.s.KeyRecord(t, key).Id, c.Id, audit.CLI); err != nil {
				t.Fatal(err)
			}
			issued = append(issued, key)
		}
		return c.Id, issued
	}
	acme, acmeKeys := customer("Acme", "pro", apikeys.NewKey{Name: "production"}, apikeys.NewKey{Name: "staging"}, apikeys.NewKey{Name: "partner"})
	_, globexKeys := customer("Globex", "free", apikeys.NewKey{Name: "web", PerMinute: 10, PerDay: 10}, apikeys.NewKey{Name: "api"})
	for i, n := range []int{4, 3, 1} {
		for range n {
			if status := p.v1(acmeKeys[i]); status != http.StatusOK {
				t.Fatalf("Acme's key %d: %d", i, status)
			}
		}
	}
	for i, n := range []int{9, 1} {
		for range n {
			p.v1(globexKeys[i])
		}
	}

	p.signIn()
	p.waitFor("the near-limit list", `document.querySelectorAll('#near-limit tbody tr').length === 2`)
	near := strings.Join(eval[[]string](p, `[...document.querySelectorAll('#near-limit tbody tr')]
		.map(tr => [...tr.querySelectorAll('td')].map(td => (td.firstChild?.textContent ?? '')).join(' | '))`), "\n")
	if want := "Acme |  | pro | 8 of 10 | 80.0 %\nweb | Globex | free | 9 of 10 | 90.0 %"; near != want {
		t.Errorf("the near-limit list:\n%s\nwant\n%s", near, want)
	}
	top := strings.Join(eval[[]string](p, `[...document.querySelectorAll('#top-customers tbody tr')]
		.map(tr => [...tr.querySelectorAll('td')].map(td => (td.firstChild?.textContent ?? '')).join(' | '))`), "\n")
	if !strings.HasPrefix(top, "Globex | free | 10 | 0 | per key\nAcme | pro | 8 | 0 | ") {
		t.Errorf("the top customers:\n%s", top)
	}

	p.do("show Acme's keys", chromedp.Click(chromedp.CSS(`#customers-list tr[data-id="`+acme+`"] button[data-action=keys]`)))
	p.waitFor("Acme's keys", `document.querySelectorAll('#customer-keys tbody tr').length === 3`)
	p.waitFor("Acme's 90 days", `document.querySelectorAll('#customer-days svg g').length === 90 &&
		document.querySelector('#customer-days svg g:last-of-type').dataset.requests === '8'`)
	p.waitFor("Acme's 48 hours", `document.querySelector('#customer-hours figcaption')?.textContent.includes(': 8 requests')`)
	fill := `getComputedStyle(document.querySelector('#customer-days rect.admitted')).fill`
	p.look(1280, true)
	if got := eval[string](p, fill); got != "rgb(91, 156, 240)" {
		t.Errorf("dark: the bars are %s, want the dark accent", got)
	}
	p.look(1280, false)
	if got := eval[string](p, fill); got != "rgb(27, 99, 198)" {
		t.Errorf("light: the bars are %s, want the light accent", got)
	}
	p.shots("use")
}
