package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/internal/limits"
	"petstore/openapi"
	"petstore/testkit/apptest"
)

// The contract is served without an API key, revalidated with its ETag.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	s := apptest.Start(t, "")
	base := s.URL + "/v1"
	etags := map[string]bool{}
	for _, tt := range []struct {
		path, contentType string
		body              []byte
	}{
		{"/v1/openapi.json", "application/json", openapi.ServedJSON("/v1", base)},
		{"/v1/openapi.yaml", "application/yaml", openapi.ServedYAML("/v1", base)},
	} {
		t.Run(tt.path, func(t *testing.T) {
			// No key, or one that is not valid: the document needs none.
			for _, key := range []string{"", "not-a-key"} {
				r := s.Do(t, http.MethodGet, tt.path, key, nil)
				if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != tt.contentType || !bytes.Equal(r.Body, tt.body) {
					t.Fatalf("key %q: %d %q, %d bytes; want 200 %s with the document for %s",
						key, r.StatusCode, r.Header.Get("Content-Type"), len(r.Body), tt.contentType, base)
				}
			}
			r := s.Do(t, http.MethodHead, tt.path, "", nil)
			etag := r.Header.Get("ETag")
			if r.StatusCode != http.StatusOK || len(r.Body) != 0 || etag == "" || etags[etag] {
				t.Fatalf("HEAD: %d, %d bytes, ETag %q (seen: %v)", r.StatusCode, len(r.Body), etag, etags)
			}
			etags[etag] = true

			for inm, want := range map[string]int{
				etag:                 http.StatusNotModified,
				`"other", W/` + etag: http.StatusNotModified,
				"*":                  http.StatusNotModified,
				`"other"`:            http.StatusOK,
			} {
				r := s.Do(t, http.MethodGet, tt.path, "", nil, "If-None-Match", inm)
				if r.StatusCode != want || r.Header.Get("ETag") != etag {
					t.Errorf("If-None-Match %s: %d, ETag %q; want %d and %s", inm, r.StatusCode, r.Header.Get("ETag"), want, etag)
				}
				if want == http.StatusNotModified && len(r.Body) != 0 {
					t.Errorf("304 with a body of %d bytes", len(r.Body))
				}
			}

			s.Do(t, http.MethodGet, tt.path+"?v=2", "", nil).Error(t, http.StatusBadRequest)
			r = s.Do(t, http.MethodPut, tt.path, "", "{}")
			r.Error(t, http.StatusMethodNotAllowed)
			if r.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", r.Header.Get("Allow"))
			}
		})
	}
}

// placeholderHost matches the hosts documentation uses as stand-ins, which
// no client should ever be sent to.
var placeholderHost = regexp.MustCompile(`(?i)\bexample\.(com|org|net)\b`)

// Without a public URL, the served copies name the address they were
// requested from, and no placeholder host: the reference page's copy as its
// only server and in its samples, the /v1 copies in their samples alone
// (their server is /v1, which names no host for a generator to bake in).
// Each address has its own copy and ETag; X-Forwarded-Host and
// X-Forwarded-Proto count only once PocketBase trusts proxy headers, and
// then the answer says it varies on them.
func TestOpenAPIDocumentNamesTheAddressRequested(t *testing.T) {
	s := apptest.Start(t, "")
	port := s.URL[strings.LastIndexByte(s.URL, ':')+1:]
	// get sends header's pairs, Host as the request's host.
	get := func(t *testing.T, path string, header ...string) (server string, r *apptest.Response) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
			} else {
				req.Header.Set(header[i], header[i+1])
			}
		}
		r = s.Send(t, req)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s %q: %d %s", path, header, r.StatusCode, r.Body)
		}
		if m := placeholderHost.Find(r.Body); m != nil {
			t.Errorf("GET %s names %s", path, m)
		}
		return namedBase(t, r.Body, path), r
	}

	etags, bodies := map[string]string{}, map[string][]byte{}
	for _, path := range []string{"/v1/openapi.json", "/docs/openapi.json"} {
		for _, tt := range []struct {
			name   string
			header []string
			want   string
		}{
			{"as requested", nil, s.URL + "/v1"},
			{"another name of the host", []string{"Host", "LocalHost:" + port}, "http://localhost:" + port + "/v1"},
			{"forwarded headers, untrusted", []string{"X-Forwarded-Host", "shop.test", "X-Forwarded-Proto", "https"}, s.URL + "/v1"},
			{"a host that is no DNS name", []string{"Host", "a!b"}, "/v1"},
		} {
			server, r := get(t, path, tt.header...)
			if server != tt.want {
				t.Errorf("%s, %s: names %q, want %q", path, tt.name, server, tt.want)
			}
			if v := r.Header.Values("Vary"); strings.Contains(strings.Join(v, ","), "X-Forwarded") {
				t.Errorf("%s, %s: Vary %q names headers that were not read", path, tt.name, v)
			}
			// Made from the Host header: no shared cache may keep it.
			if cc, v := r.Header.Get("Cache-Control"), strings.Join(r.Header.Values("Vary"), ","); cc != "private, max-age=300" || !strings.Contains(v, "Host") {
				t.Errorf("%s, %s: Cache-Control %q, Vary %q; want private and Host", path, tt.name, cc, v)
			}
			// One ETag per copy: the same for the same address, another for
			// another body.
			copyName, etag := path+" for "+tt.want, r.Header.Get("ETag")
			if seen, ok := etags[copyName]; ok && seen != etag || bodies[etag] != nil && !bytes.Equal(bodies[etag], r.Body) {
				t.Errorf("%s, %s: ETag %q; ETags so far %v: one per copy", path, tt.name, etag, etags)
			}
			etags[copyName], bodies[etag] = etag, r.Body
		}
	}
	// The ETag of one address's copy does not validate another's.
	asRequested := etags["/v1/openapi.json for "+s.URL+"/v1"]
	if _, r := get(t, "/v1/openapi.json", "Host", "localhost:"+port, "If-None-Match", asRequested); r.Header.Get("ETag") == asRequested {
		t.Errorf("another address's copy has the same ETag")
	}

	s.App.Settings().TrustedProxy.Headers = []string{"X-Forwarded-For"}
	for _, tt := range []struct {
		name     string
		leftmost bool
		header   []string
		want     string
	}{
		{"trusted", false, []string{"X-Forwarded-Host", "Shop.test", "X-Forwarded-Proto", "HTTPS"}, "https://shop.test/v1"},
		{"host only", false, []string{"X-Forwarded-Host", "shop.test:8443"}, "http://shop.test:8443/v1"},
		{"rightmost of a list", false, []string{"X-Forwarded-Host", "evil.test, shop.test", "X-Forwarded-Proto", "http, https"}, "https://shop.test/v1"},
		{"leftmost of a list", true, []string{"X-Forwarded-Host", "shop.test, inner.test", "X-Forwarded-Proto", "https, http"}, "https://shop.test/v1"},
		{"unknown scheme", false, []string{"X-Forwarded-Proto", "gopher"}, s.URL + "/v1"},
		{"a forwarded host that is no DNS name", false, []string{"X-Forwarded-Host", "shop.test/evil"}, "/v1"},
		{"IPv6", false, []string{"X-Forwarded-Host", "[::1]:8090"}, "http://[::1]:8090/v1"},
	} {
		s.App.Settings().TrustedProxy.UseLeftmostIP = tt.leftmost
		server, r := get(t, "/docs/openapi.json", tt.header...)
		if server != tt.want {
			t.Errorf("%s: names %q, want %q", tt.name, server, tt.want)
		}
		if v := strings.Join(r.Header.Values("Vary"), ", "); !strings.Contains(v, "X-Forwarded-Host") || !strings.Contains(v, "X-Forwarded-Proto") {
			t.Errorf("%s: Vary %q does not name the forwarded headers", tt.name, v)
		}
	}
}

// namedBase is the base URL a served copy names in its samples (createPet's
// curl), which the reference page's copy names as its server too; a /v1
// copy's server must be /v1 alone.
func namedBase(t *testing.T, doc []byte, path string) string {
	t.Helper()
	server := firstServer(t, doc, path)
	var d struct {
		Paths map[string]map[string]struct {
			Samples []struct{ Source string } `json:"x-codeSamples"`
		}
	}
	if err := json.Unmarshal(doc, &d); err != nil || len(d.Paths["/pets"]["post"].Samples) != 1 {
		t.Fatalf("%s: %v; want createPet's one sample", path, err)
	}
	_, call, _ := strings.Cut(d.Paths["/pets"]["post"].Samples[0].Source, `"`)
	base, _, _ := strings.Cut(call, "/pets")
	switch {
	case path == "/docs/openapi.json" && server != base:
		t.Errorf("%s: server %q, samples on %q; want one base URL", path, server, base)
	case path != "/docs/openapi.json" && server != "/v1":
		t.Errorf("%s: server %q, want /v1: a host there becomes a generated client's default", path, server)
	}
	return base
}

// firstServer decodes a JSON document and returns its only server's URL.
func firstServer(t *testing.T, doc []byte, what string) string {
	t.Helper()
	var d struct {
		Servers []struct{ URL string }
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(d.Servers) != 1 {
		t.Fatalf("%s: servers %+v, want the service alone", what, d.Servers)
	}
	return d.Servers[0].URL
}

// The reference page's copy of the contract is the served document, outside
// /v1 and uncounted: it stays available to an address over its limit.
func TestReferencePageCopyIsUncounted(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{Limits: limits.Config{AnonymousPerMinute: 1, MinuteWindow: time.Hour}})
	s.Do(t, http.MethodGet, "/v1/openapi.json", "", nil)
	if r := s.Do(t, http.MethodGet, "/v1/openapi.json", "", nil); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second keyless request: %d, want 429", r.StatusCode)
	}
	served := openapi.ServedJSON(s.URL+"/v1", s.URL+"/v1")
	for range 3 {
		r := s.Do(t, http.MethodGet, "/docs/openapi.json", "", nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || !bytes.Equal(r.Body, served) {
			t.Fatalf("/docs/openapi.json: %d %q, %d bytes; want 200 with the served document", r.StatusCode, r.Header.Get("Content-Type"), len(r.Body))
		}
		if r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("/docs/openapi.json carries rate-limit headers: %v", r.Header)
		}
	}
}
