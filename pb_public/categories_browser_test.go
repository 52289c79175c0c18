package pbpublic_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
)

// Staff, on the staff page in Chromium at 1280 and 390 px, see the numbers
// pets carry as unnamed categories with their pets, name one with one click
// and a name, add a category with the number after the highest in use, rename and delete
// it, and are told why a category that pets use cannot be deleted; clients
// see each name at once in GET /v1/categories, and the audit trail has each
// change by the staff member.
func TestStaffPageCategoriesInChromium(t *testing.T) {
	p := openStaffPage(t)
	key := p.s.NewKey(t, apikeys.NewKey{})
	for _, category := range []int{3, 3, 8} {
		p.s.CreatePet(t, key, map[string]any{"name": "pet", "categoryId": category})
	}
	listed := func() string {
		t.Helper()
		r := p.s.Do(t, http.MethodGet, "/v1/categories", key, nil)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("listCategories: %d %s", r.StatusCode, r.Body)
		}
		return strings.TrimSpace(string(r.Body))
	}
	rows := func() string {
		t.Helper()
		return strings.Join(eval[[]string](p, `[...document.querySelectorAll('#categories-list tbody tr')]
			.map(tr => [...tr.querySelectorAll('td:not(.actions)')].map(td => td.textContent).join(' | '))`), "\n")
	}
	// afterSave runs steps and waits for the status line they end with.
	afterSave := func(what, says string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		p.do(what, append([]chromedp.Action[chromedp.Void]{
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#categories-status').textContent = ''`)}, steps...)...)
		p.waitFor(what, `document.querySelector('#categories-status').textContent.includes(`+jsString(says)+`)`)
	}

	p.signIn()
	p.waitFor("the categories section", `document.querySelector('#categories-status').textContent.includes('updated')`)
	if got, want := rows(), "3 | unnamed category 3 | 2 pets\n8 | unnamed category 8 | 1 pet"; got != want {
		t.Errorf("the unnamed categories:\n%s\nwant\n%s", got, want)
	}
	p.shots("categories-unnamed")

	afterSave("name category 3", "Category 3 is named Dogs.",
		chromedp.Click(chromedp.CSS(`#categories-list tr[data-id="3"] button[data-action=name]`)),
		chromedp.SendKeys(chromedp.CSS(`#category-form [name=name]`), "Dogs"),
		chromedp.Click(chromedp.CSS(`#category-form button[type=submit]`)))
	if got := listed(); got != `[{"id":3,"name":"Dogs"}]` {
		t.Errorf("after naming 3, listCategories %s", got)
	}
	afterSave("add a category", "Category 9 is named Cats.",
		chromedp.SendKeys(chromedp.CSS(`#category-form [name=name]`), "Cats"),
		chromedp.Click(chromedp.CSS(`#category-form button[type=submit]`)))
	afterSave("rename it", "Category 9 is named Felines.",
		chromedp.Click(chromedp.CSS(`#categories-list tr[data-id="9"] button[data-action=rename]`)),
		chromedp.SetValue(chromedp.CSS(`#category-form [name=name]`), "Felines"),
		chromedp.Click(chromedp.CSS(`#category-form button[type=submit]`)))
	if got := listed(); got != `[{"id":3,"name":"Dogs"},{"id":9,"name":"Felines"}]` {
		t.Errorf("after the rename, listCategories %s", got)
	}
	if got, want := rows(), "3 | Dogs | 2 pets\n8 | unnamed category 8 | 1 pet\n9 | Felines | 0 pets"; got != want {
		t.Errorf("the categories:\n%s\nwant\n%s", got, want)
	}
	p.shots("categories-named")

	// Delete asks first; declined, it deletes nothing.
	p.do("answer the next questions no", chromedp.Evaluate[chromedp.Void](
		`window.asked = []; window.answer = false; window.confirm = (m) => (window.asked.push(m), window.answer)`))
	p.do("decline deleting 9", chromedp.Click(chromedp.CSS(`#categories-list tr[data-id="9"] button[data-action=delete]`)))
	p.waitFor("the question", `window.asked.length === 1`)
	if got, want := eval[string](p, `window.asked[0]`), "Delete category 9, Felines? Clients no longer see its name."; got != want {
		t.Errorf("deleting asks %q, want %q", got, want)
	}
	if got := listed(); got != `[{"id":3,"name":"Dogs"},{"id":9,"name":"Felines"}]` {
		t.Errorf("after a declined deletion, listCategories %s", got)
	}
	p.do("answer yes from now on", chromedp.Evaluate[chromedp.Void](`window.answer = true`))

	p.expect("DELETE", "/api/petstore/categories/3")
	afterSave("delete a used category", "2 pets use it",
		chromedp.Click(chromedp.CSS(`#categories-list tr[data-id="3"] button[data-action=delete]`)))
	if !eval[bool](p, `document.querySelector('#categories-status').classList.contains('error')`) {
		t.Error("the refusal is not drawn as an error")
	}
	if got, text := eval[string](p, `getComputedStyle(document.querySelector('#categories-status')).color`),
		eval[string](p, `getComputedStyle(document.body).color`); got == text {
		t.Errorf("the refusal is drawn in the text's colour, %s", got)
	}
	p.do("delete an unused one", chromedp.Click(chromedp.CSS(`#categories-list tr[data-id="9"] button[data-action=delete]`)))
	p.waitFor("its row gone", `document.querySelector('#categories-list tr[data-id="9"]') === null`)
	p.waitFor("the status after", `document.querySelector('#categories-status').textContent.includes('updated')`)
	if eval[bool](p, `document.querySelector('#categories-status').classList.contains('error')`) {
		t.Error("the status after a success is still drawn as an error")
	}
	if got := eval[string](p, `document.querySelector('#category-form [name=number]').placeholder`); got != "after the highest" {
		t.Errorf("the number's placeholder is %q: the service takes the number after the highest in use, not a free one", got)
	}
	// A category's pets are counted with the page's thousands separators
	// (Chromium's locale here is en-US).
	if got := eval[string](p, `renderCategories.call(null, categories = [{id: 4, name: "Many", pets: 1001}]),
		document.querySelector('#categories-list tr[data-id="4"] td.pets').textContent`); got != "1,001 pets" {
		t.Errorf("1001 pets read %q, want 1,001 pets", got)
	}
	if got := eval[string](p, `document.title`); got != "Staff · petstore" {
		t.Errorf("the page's title is %q: it holds more than API keys", got)
	}
	if got := listed(); got != `[{"id":3,"name":"Dogs"}]` {
		t.Errorf("after the deletion, listCategories %s", got)
	}

	var trail []struct{ Action, Category, ActorEmail string }
	if err := p.s.App.DB().NewQuery("SELECT action, category, actor_email FROM audit_log WHERE category != '' ORDER BY rowid").All(&trail); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range trail {
		got = append(got, r.Action+" "+r.Category+" "+r.ActorEmail)
	}
	want := "category.created 3 staff@example.com,category.created 9 staff@example.com,category.renamed 9 staff@example.com,category.deleted 9 staff@example.com"
	if strings.Join(got, ",") != want {
		t.Errorf("the audit trail: %q, want %q", got, want)
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}
