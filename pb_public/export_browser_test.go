package pbpublic_test

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"petstore/internal/apikeys"
)

// Staff, on the staff page in Chromium, download the last 30 days' use as
// CSV with the export form: the file holds the key's requests as sent; the
// key's use shows its last 48 hours, drawn by the page.
func TestStaffPageExportsUsageInChromium(t *testing.T) {
	p := openStaffPage(t)
	key := p.s.NewKey(t, apikeys.NewKey{Name: "shop"})
	for range 3 {
		p.v1(key)
	}
	id := p.s.KeyRecord(t, key).Id
	p.signIn()
	dir := t.TempDir()
	if _, err := chromedp.CallBrowser(p.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
	}); err != nil {
		t.Fatal(err)
	}
	p.do("export", chromedp.Click(chromedp.CSS(`#export-form button[type=submit]`)))
	p.waitFor("the export saved", `document.querySelector('#export-status').textContent.startsWith('Saved')`)

	now := time.Now().UTC()
	file := filepath.Join(dir, "usage-"+now.AddDate(0, 0, -29).Format(time.DateOnly)+"-"+now.Format(time.DateOnly)+".csv")
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if body, err = os.ReadFile(file); err == nil || time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("the download: %v", err)
			}
			break
		}
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var requests int64
	for _, row := range rows[1:] {
		if row[1] == id {
			n, _ := strconv.ParseInt(row[7], 10, 64)
			requests += n
		}
	}
	if requests != 3 {
		t.Errorf("the downloaded export counts %d requests of the key, want 3: %q", requests, rows)
	}
	p.do("its use", chromedp.Click(chromedp.CSS(row(id)+` button[data-action=usage]`)))
	p.waitFor("its hourly chart", `document.querySelector('#usage-hours figcaption')?.textContent.includes(': 3 requests')`)
	p.shots("export")
}
