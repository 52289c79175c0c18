package realserver_test

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"petstore/internal/limits"
)

// TestGuestFloodIsBounded floods PocketBase's /api/health, outside /v1 and
// without credentials, with 20,000 requests whose query, User-Agent and
// Referer are each kilobytes long (as an attacker filled the disk through
// PocketBase's activity log): the client network gets its guest window's
// requests and then 429 with Retry-After, pb_data grows by at most 2 MB,
// and a signed-in superuser and a /v1 key from the same address are still
// served.
func TestGuestFloodIsBounded(t *testing.T) {
	dir := t.TempDir()
	const staffPassword = "a long enough password"
	if _, stderr, status := petstore(t, dir, "superuser", "upsert", "staff@example.com", staffPassword); status != 0 {
		t.Fatalf("superuser upsert: %d %s", status, stderr)
	}
	key, _ := createKey(t, dir, "--plan", "business")
	// The directory's size after a start and a stop, which checkpoint and
	// close the databases: the flood's growth is measured against it.
	p := start(t, dir)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	before := dirSize(t, dir)

	p = start(t, dir)
	ctx := context.Background()
	status, body, err := p.Do(ctx, http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"staff@example.com","password":"`+staffPassword+`"}`))
	var auth struct{ Token string }
	if status != http.StatusOK || json.Unmarshal(body, &auth) != nil || auth.Token == "" {
		t.Fatalf("superuser auth: %d %v %s", status, err, body)
	}

	query := "/api/health?q=" + strings.Repeat("a", 2900)
	long := strings.Repeat("x", 2048)
	const requests, workers = 20_000, 16
	var next, ok, refused atomic.Int64
	var mu sync.Mutex
	others := map[int]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(3 * time.Minute)
	for range workers {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for next.Add(1) <= requests && time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodGet, p.URL+query, nil)
				req.Header.Set("User-Agent", long)
				req.Header.Set("Referer", "https://example.com/"+long)
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("flood: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					ok.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
					if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 61 {
						t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
					}
					refused.Add(1)
				default:
					mu.Lock()
					others[resp.StatusCode]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if n := ok.Load() + refused.Load(); n != requests || len(others) > 0 {
		t.Fatalf("the flood: %d answered 200 or 429 of %d; others %v", n, requests, others)
	}
	// Start's readiness probes were guests too: at most a window, and most
	// of it (the window may have turned during the flood: two).
	if n := ok.Load(); n < limits.DefaultGuestPerMinute/2 || n > 2*limits.DefaultGuestPerMinute {
		t.Errorf("%d guest requests served, want about %d (a minute's window)", n, limits.DefaultGuestPerMinute)
	}

	// The network is over its guest window; a superuser and an API key are
	// not guests.
	resp, _, err := p.Exchange(ctx, http.MethodGet, "/api/health", "", nil, "Authorization", auth.Token)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a superuser over the guest window: %v %v", resp, err)
	}
	if status, body, err := p.Do(ctx, http.MethodGet, "/v1/pets", key, nil); status != http.StatusOK {
		t.Errorf("/v1 with a key over the guest window: %d %v %s", status, err, body)
	}
	rss, err := p.RSS()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	grown := dirSize(t, dir) - before
	t.Logf("served %d, refused %d; pb_data grew by %d KB; RSS after the flood %d MB", ok.Load(), refused.Load(), grown>>10, rss>>20)
	if grown > 2<<20 {
		t.Errorf("pb_data grew by %d KB, want at most 2 MB", grown/1024)
	}
	if rss > 100<<20 {
		t.Errorf("RSS after the flood %d MB, want under 100 MB", rss>>20)
	}
}

// dirSize is the size of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}
