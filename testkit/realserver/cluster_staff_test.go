package realserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"petstore/testkit/realserver"
)

// chromium is Debian's package.
const chromium = "/usr/bin/chromium"

// The staff page shows a cluster's nodes through a follower's address (the
// gate forwards the page and its API to the leader): each node's name, URL,
// role, term, lag and replica state, the leader marked, at 1280 and 390 px
// without sideways scrolling. The CLI on the serving leader's --dir works
// and what it writes ships (a superuser the page signs in with, a key that
// works on the next leader after the old one's SIGKILL); on a follower's
// --dir it refuses, naming the leader, the new one after the failover. After
// the failover the page, through the other follower, shows the new leader.
func TestClusterStaffPageAndCLI(t *testing.T) {
	requireChromium(t)
	c := startCluster(t, 3)
	startLeaderAndFollowers(t, c)
	leader, follower, other := c.nodes[0], c.nodes[1], c.nodes[2]
	if _, stderr, err := realserver.Run(bin, leader.dir, "superuser", "upsert", "staff@example.com", "a long enough password"); err != nil {
		t.Fatalf("superuser upsert on the leader's --dir: %v\n%s", err, stderr)
	}
	term := readyTerm(t, leader)

	// The CLI on a follower's --dir names the leader.
	names := fmt.Sprintf("%s at %s (term %d)", leader.name, leader.url(), term)
	waitUntil(t, 5*time.Second, "the CLI on a follower's --dir names the leader", func() bool {
		_, stderr, err := realserver.Keys(bin, follower.dir, "list")
		return err != nil && strings.Contains(stderr, "the leader, as this follower last knew it: "+names)
	})

	b := openChromium(t)
	b.signIn(follower.url())
	// A follower campaigns while its first restore runs; the page, read
	// again every 5 s, shows it following once the copy holds the replica.
	b.waitFor("three nodes, the followers following", `document.querySelectorAll('#nodes-list tbody tr').length === 3 &&
		document.querySelector('#nodes-status').textContent.includes('Leader n0, term `+fmt.Sprint(term)+`') &&
		[...document.querySelectorAll('#nodes-list tbody tr:not(.leader)')].every(tr => tr.textContent.includes('following term `+fmt.Sprint(term)+`'))`)
	want := []*regexp.Regexp{
		regexp.MustCompile(`^n0 \| ` + regexp.QuoteMeta(leader.url()) + fmt.Sprintf(` \| leader \| %d \| none: it leads \| shipping$`, term)),
		regexp.MustCompile(`^n1 \| ` + regexp.QuoteMeta(follower.url()) + fmt.Sprintf(` \| follower \|  \| [0-9]+\.[0-9] s · [0-9]+ transactions? \| following term %d$`, term)),
		regexp.MustCompile(`^n2 \| ` + regexp.QuoteMeta(other.url()) + fmt.Sprintf(` \| follower \|  \| [0-9]+\.[0-9] s · [0-9]+ transactions? \| following term %d$`, term)),
	}
	rows := b.nodeRows()
	for i, re := range want {
		if i >= len(rows) || !re.MatchString(rows[i]) {
			t.Errorf("the nodes' rows:\n%s\nwant row %d to match %s", strings.Join(rows, "\n"), i, re)
		}
	}
	if got := b.eval(`document.querySelectorAll('#nodes-list tr.leader').length`); got != "1" {
		t.Errorf("rows marked as the leader: %s, want 1", got)
	}
	b.shots("nodes", 1280, 390)

	// A key made on the leader's --dir ships: it works on the next leader.
	key, _, err := realserver.CreateKey(bin, leader.dir, "--plan", "free")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // shipped within a second
	b.navigate("about:blank")   // no request of the page meets the failover
	leader.kill()
	var next *clusterNode
	waitUntil(t, 20*time.Second, "a follower leads", func() bool {
		for _, n := range []*clusterNode{follower, other} {
			if n.leads() {
				next = n
				return true
			}
		}
		return false
	})
	if status, body := getWithKey(t, next, "/v1/pets", key); status != http.StatusOK {
		t.Errorf("the key made by the CLI on the old leader's --dir, on the new leader: %d %s", status, body)
	}
	stillFollows := follower
	if next == follower {
		stillFollows = other
	}
	newTerm := readyTerm(t, next)
	names = fmt.Sprintf("%s at %s (term %d)", next.name, next.url(), newTerm)
	waitUntil(t, 5*time.Second, "the CLI on a follower's --dir names the new leader", func() bool {
		_, stderr, err := realserver.Keys(bin, stillFollows.dir, "list")
		return err != nil && strings.Contains(stderr, names)
	})

	b.signIn(stillFollows.url())
	b.waitFor("the new leader, the old one gone", fmt.Sprintf(`document.querySelectorAll('#nodes-list tbody tr').length === 2 &&
		document.querySelector('#nodes-list tr.leader')?.dataset.node === '%s' &&
		document.querySelector('#nodes-status').textContent.includes('term %d')`, next.name, newTerm))
	b.shots("nodes-after-failover", 390)
	b.check()
}

// readyTerm is the term in the leader's /readyz.
func readyTerm(t *testing.T, leader *clusterNode) int64 {
	t.Helper()
	status, body := leader.get("/readyz")
	var ready struct{ Term int64 }
	if err := json.Unmarshal([]byte(body), &ready); status != http.StatusOK || err != nil || ready.Term == 0 {
		t.Fatalf("%s's /readyz: %d %s", leader.name, status, body)
	}
	return ready.Term
}

func getWithKey(t *testing.T, n *clusterNode, path, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, n.url()+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("PETSTORE_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%v: install Debian's chromium (.ci/run does)", err)
		}
		t.Skipf("%v: install Debian's chromium to run this test (CI requires it)", err)
	}
}

// browser is the staff page in a headless Chromium, with the error answers
// and script errors it met.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots

	mu       sync.Mutex
	failures []string
}

// openChromium starts a headless Chromium with a fresh profile, closed
// with the test; the flags keep it from calling home.
func openChromium(t *testing.T) *browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	b := &browser{t: t, ctx: ctx, dir: t.TempDir()}
	if dir, err := os.MkdirTemp("", "petstore-nodes-*"); err == nil {
		b.dir = dir
	}
	t.Logf("screenshots of the staff page's nodes: %s", b.dir)
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if ev.Response.Status >= 400 {
				b.failures = append(b.failures, fmt.Sprintf("%s: %d", ev.Response.URL, ev.Response.Status))
			}
		case *runtime.EventExceptionThrown:
			b.failures = append(b.failures, ev.ExceptionDetails.Text+" "+fmt.Sprint(ev.ExceptionDetails.Exception.Description))
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) navigate(url string) { b.t.Helper(); b.do("open "+url, chromedp.Navigate(url)) }

// eval is the JavaScript expression's value, as JSON.
func (b *browser) eval(expression string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[json.RawMessage](expression))
	if err != nil {
		b.t.Fatalf("%s: %v", expression, err)
	}
	return string(v)
}

func (b *browser) waitFor(what, condition string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](condition)); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// signIn opens the staff page at base and signs in as staff@example.com.
func (b *browser) signIn(base string) {
	b.t.Helper()
	b.do("sign in at "+base, chromedp.Navigate(base+"/staff/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=email]`), "staff@example.com"),
		chromedp.SendKeys(chromedp.CSS(`#signin-form [name=password]`), "a long enough password"),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS("#nodes")))
	b.waitFor("the nodes", `document.querySelector('#nodes-status').textContent.includes('updated')`)
}

// nodeRows are the nodes' rows, their cells joined by " | ".
func (b *browser) nodeRows() []string {
	b.t.Helper()
	var rows []string
	if err := json.Unmarshal([]byte(b.eval(`[...document.querySelectorAll('#nodes-list tbody tr')]
		.map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent).join(' | '))`)), &rows); err != nil {
		b.t.Fatal(err)
	}
	return rows
}

// shots checks at each width that the page does not scroll sideways and
// that the nodes' section is within the window, and saves a screenshot.
func (b *browser) shots(name string, widths ...int64) {
	b.t.Helper()
	for _, width := range widths {
		viewport := chromedp.EmulateViewport(width, 900)
		if width < 500 {
			viewport = chromedp.EmulateViewport(width, 844, chromedp.EmulateMobile)
		}
		b.do("look", viewport, chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`))
		if got := b.eval(`[document.documentElement.scrollWidth <= innerWidth,
			[...document.querySelectorAll('#nodes td, #nodes button')].every(e => e.getBoundingClientRect().right <= innerWidth + 0.5)]`); got != "[true,true]" {
			b.t.Errorf("%s at %d px: within the window (page, nodes' cells): %s", name, width, got)
		}
		if err := chromedp.Do(b.ctx, chromedp.ScrollIntoView(chromedp.CSS("#nodes"))); err != nil {
			b.t.Fatal(err)
		}
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, fmt.Sprintf("%s-%d.png", name, width)), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.do("look", chromedp.EmulateViewport(1280, 900))
}

// check fails the test for every error answer and script error the page met.
func (b *browser) check() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.failures) > 0 {
		b.t.Errorf("failures in the page: %q", b.failures)
	}
}
