package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/apikeys"
	"petstore/internal/pets"
	"petstore/testkit/apptest"
)

// Behind a reverse proxy that serves /v1 under a path prefix, with
// --public-url naming the proxy's address: Location, every Link and the
// served document are absolute under it, and a client that follows the Links
// as written, through the proxy, reaches every pet. The proxy forwards only
// its prefix, so a root-relative link (/v1/...) would fail there with 404.
func TestBehindAPrefixProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + ln.Addr().String() + "/shop/api/v1"
	s := apptest.StartWith(t, apptest.Config{PublicURL: public})
	proxy := startPrefixProxy(t, ln, "/shop/api", s.URL)
	key := s.NewKey(t, apikeys.NewKey{Plan: "enterprise", PerMinute: 1000, PerDay: 100_000})

	// send is raw HTTP through the proxy.
	send := func(method, target string, body []byte) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, target, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := proxy.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, data
	}

	created := map[int64]bool{}
	for i := range 23 {
		resp, body := send(http.MethodPost, public+"/pets", fmt.Appendf(nil, `{"name":"pet %d","categoryId":1}`, i))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create through the proxy: %d %s", resp.StatusCode, body)
		}
		var p pets.Pet
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		if got, want := resp.Header.Get("Location"), public+"/pets/"+strconv.FormatInt(p.ID, 10); got != want {
			t.Fatalf("Location %q, want %q", got, want)
		}
		created[p.ID] = true
	}

	// The Location and the successor Link lead somewhere through the proxy.
	var last int64
	for id := range created {
		last = id
	}
	resp, body := send(http.MethodGet, public+"/pets/"+strconv.FormatInt(last, 10), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the Location through the proxy: %d %s", resp.StatusCode, body)
	}
	if got, want := resp.Header.Get("Link"), "<"+public+`/pets>; rel="successor-version"`; got != want {
		t.Errorf("getPet's Link %q, want %q", got, want)
	}

	// Follow every Link as written, from the first page, resolving it against
	// the page it came from as any client does.
	seen := map[int64]int{}
	page, pages := public+"/pets?limit=5", 0
	for page != "" {
		resp, body := send(http.MethodGet, page, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s through the proxy: %d %s", page, resp.StatusCode, body)
		}
		var list []pets.Pet
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		for _, p := range list {
			seen[p.ID]++
		}
		page = ""
		if link := resp.Header.Get("Link"); link != "" {
			if !strings.HasPrefix(link, "<"+public+"/pets?") || !strings.HasSuffix(link, `>; rel="next"`) {
				t.Fatalf("Link %q: want <%s/pets?...>; rel=\"next\"", link, public)
			}
			next, err := resp.Request.URL.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
			if err != nil {
				t.Fatal(err)
			}
			page = next.String()
		}
		if pages++; pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if pages != 5 {
		t.Errorf("%d pages of 5 for 23 pets, want 5", pages)
	}
	for id := range created {
		if seen[id] != 1 {
			t.Errorf("pet %d seen %d times through the proxy, want once", id, seen[id])
		}
	}

	// The Go client, given the public URL, creates through the proxy and
	// walks every page behind it.
	c, err := client.New(public, key, client.Options{HTTPClient: proxy.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	made, err := c.CreatePet(ctx, client.NewPet{Name: "through the client", CategoryID: 2})
	if err != nil {
		t.Fatalf("the client's create through the proxy: %v", err)
	}
	created[made.ID] = true
	walked := map[int64]int{}
	for p, err := range c.ListPets(ctx, client.ListOptions{Limit: 4}) {
		if err != nil {
			t.Fatalf("the client's walk through the proxy: %v", err)
		}
		walked[p.ID]++
	}
	if len(walked) != len(created) {
		t.Errorf("the client walked %d pets through the proxy, want %d", len(walked), len(created))
	}
	for id := range created {
		if walked[id] != 1 {
			t.Errorf("the client saw pet %d %d times, want once", id, walked[id])
		}
	}

	// The served documents name the public URL alone, wherever they are
	// fetched from: the tools' copy its path (a generator's default base URL
	// is then never the address it fetched from), the reference page's copy
	// the whole URL.
	publicPath := "/shop/api/v1"
	resp, body = send(http.MethodGet, public+"/openapi.json", nil)
	if server := firstServer(t, body, "openapi.json through the proxy"); resp.StatusCode != http.StatusOK || server != publicPath ||
		resp.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("openapi.json through the proxy: %d, first server %q, Cache-Control %q; want 200, %q, public (one document for all)",
			resp.StatusCode, server, resp.Header.Get("Cache-Control"), publicPath)
	}
	for path, want := range map[string]string{"/v1/openapi.json": publicPath, "/docs/openapi.json": public} {
		r := s.Do(t, http.MethodGet, path, "", nil)
		if server := firstServer(t, r.Body, path); server != want {
			t.Errorf("%s at the server's own address: first server %q, want %q", path, server, want)
		}
	}

	// A root-relative link, as the service gives without --public-url, does
	// not reach the service through this proxy.
	if resp, _ := send(http.MethodGet, (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/v1/pets"}).String(), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/v1/pets at the proxy: %d, want its 404 (the test's proxy would hide the bug)", resp.StatusCode)
	}
}

// startPrefixProxy serves, on ln, a reverse proxy that maps prefix+/v1/...
// to target's /v1/... and answers anything else with 404.
func startPrefixProxy(t *testing.T, ln net.Listener, prefix, target string) *httptest.Server {
	t.Helper()
	backend, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(backend)
		pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
		pr.Out.URL.RawPath = ""
		pr.SetXForwarded()
	}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix+"/v1/") {
			http.NotFound(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
