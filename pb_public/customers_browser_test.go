package pbpublic_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
)

// Staff, on the staff page in Chromium at 1280 and 390 px, light and dark,
// add a customer on a plan, give it two keys (each moves to its plan at its
// next /v1 request; the keys' list names the customer), see its keys with today's use and its own, and move the customer
// to another plan, which moves both keys at once (the keys' list shows it); a taken name is refused
// with why; the audit trail has each change by the staff member.
func TestStaffPageCustomersInChromium(t *testing.T) {
	p := openStaffPage(t)
	production, staging := p.s.NewKey(t, apikeys.NewKey{Name: "production"}), p.s.NewKey(t, apikeys.NewKey{Name: "staging"})
	limit := func(key string) string {
		t.Helper()
		r := p.s.Do(t, http.MethodGet, "/v1/pets", key, nil)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("listPets: %d %s", r.StatusCode, r.Body)
		}
		return r.Header.Get("X-RateLimit-Limit")
	}
	afterSave := func(what, says string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		p.do(what, append([]chromedp.Action[chromedp.Void]{
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#customers-status').textContent = ''`)}, steps...)...)
		p.waitFor(what, `document.querySelector('#customers-status').textContent.includes(`+jsString(says)+`)`)
	}
	rows := func() string {
		t.Helper()
		return strings.Join(eval[[]string](p, `[...document.querySelectorAll('#customers-list tbody tr')]
			.map(tr => [...tr.querySelectorAll('td:not(.actions)')].map(td => td.textContent).join(' | '))`), "\n")
	}
	choose := func(selector, value string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector(` + jsString(selector) + `); s.value = ` +
			jsString(value) + `; s.dispatchEvent(new Event('change')); })()`)
	}

	p.signIn()
	p.waitFor("the customers section", `document.querySelector('#customers-status').textContent.includes('updated')`)
	afterSave("add a customer", "Customer Acme is on plan pro, with 0 keys.",
		chromedp.SendKeys(chromedp.CSS(`#customer-form [name=name]`), "Acme"),
		chromedp.SendKeys(chromedp.CSS(`#customer-form [name=contact]`), "ops@acme.example"),
		chromedp.SendKeys(chromedp.CSS(`#customer-form [name=notes]`), "signed in May"),
		choose(`#customer-form [name=plan]`, "pro"),
		chromedp.Click(chromedp.CSS(`#customer-form button[type=submit]`)))
	id := eval[string](p, `document.querySelector('#customers-list tbody tr').dataset.id`)
	if saved, err := p.s.App.FindRecordById("customers", id); err != nil || saved.GetString("notes") != "signed in May" {
		t.Errorf("the customer as saved: %v %v", saved, err)
	}

	p.expect("POST", "/api/petstore/customers")
	afterSave("a taken name", "another customer has this name",
		chromedp.SendKeys(chromedp.CSS(`#customer-form [name=name]`), "ACME"),
		chromedp.Click(chromedp.CSS(`#customer-form button[type=submit]`)))
	p.do("clear the form", chromedp.Evaluate[chromedp.Void](`document.querySelector('#customer-form').reset()`))

	for _, k := range []struct{ key, name string }{{production, "production"}, {staging, "staging"}} {
		afterSave("give "+k.name, "Key "+k.name+" belongs to Acme, on plan pro.",
			chromedp.SendKeys(chromedp.CSS(`#customer-assign-form [name=key]`), p.s.KeyRecord(t, k.key).Id),
			choose(`#customer-assign-form [name=customer]`, id),
			chromedp.Click(chromedp.CSS(`#customer-assign-form button[type=submit]`)))
		if got := limit(k.key); got != "300" {
			t.Errorf("%s given to a pro customer: limit %s, want 300", k.name, got)
		}
	}
	// The list was read before staging's request: today, production's one.
	if got, want := rows(), "Acme | pro | 2 | 1 | ops@acme.example"; got != want {
		t.Errorf("the customers: %q, want %q", got, want)
	}
	p.waitFor("the keys' customer column", `[...document.querySelectorAll('#keys tbody td.plan .customer')].map(td => td.textContent).join() === 'Acme,Acme'`)
	p.do("show its keys", chromedp.Click(chromedp.CSS(`#customers-list tr[data-id="`+id+`"] button[data-action=keys]`)))
	p.waitFor("its keys", `document.querySelectorAll('#customer-keys tbody tr').length === 2`)
	if got := p.text("#customer-keys-title"); got != "Keys of Acme (plan pro)" {
		t.Errorf("the keys' title %q", got)
	}
	if got := eval[string](p, `[...document.querySelectorAll('#customer-keys tbody tr')].map(tr => tr.children[0].textContent + ' ' + tr.children[3].textContent).join(', ')`); got != "staging 1, production 1" {
		t.Errorf("the customer's keys with today's use: %q", got)
	}
	p.waitFor("its hourly chart", `document.querySelector('#customer-hours figcaption')?.textContent.includes(': 2 requests')`)
	if got := eval[int](p, `document.querySelectorAll('#customer-hours svg rect.admitted').length`); got < 1 || got > 2 {
		t.Errorf("the customer's hourly chart has %d bars of admitted requests, want 1 (or 2 across an hour's end)", got)
	}
	p.shots("customers")

	afterSave("move it to business", "Customer Acme is on plan business, with 2 keys.",
		chromedp.Click(chromedp.CSS(`#customers-list tr[data-id="`+id+`"] button[data-action=edit]`)),
		choose(`#customer-form [name=plan]`, "business"),
		chromedp.Click(chromedp.CSS(`#customer-form button[type=submit]`)))
	p.waitFor("the keys' list on business", `[...document.querySelectorAll('#keys tbody td.plan .plan-name')].map(td => td.textContent).join() === 'business,business'`)
	for _, k := range []string{production, staging} {
		if got := limit(k); got != "1000" {
			t.Errorf("after the customer's move to business: limit %s, want 1000", got)
		}
	}

	var trail []struct{ Action, ActorEmail string }
	if err := p.s.App.DB().NewQuery("SELECT action, actor_email FROM audit_log WHERE customer != '' OR action = 'key.customer_changed' ORDER BY rowid").All(&trail); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range trail {
		got = append(got, r.Action+" "+r.ActorEmail)
	}
	want := "customer.created staff@example.com,key.customer_changed staff@example.com,key.customer_changed staff@example.com,customer.changed staff@example.com"
	if strings.Join(got, ",") != want {
		t.Errorf("the audit trail: %q, want %q", got, want)
	}
}
