package api_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"petstore/internal/apptest"
	"petstore/limits"
	"petstore/openapi"
)

// The contract is served without an API key, revalidated with its ETag.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	s := apptest.Start(t, "")
	etags := map[string]bool{}
	for _, tt := range []struct {
		path, contentType string
		body              []byte
	}{
		{"/v1/openapi.json", "application/json", openapi.JSON},
		{"/v1/openapi.yaml", "application/yaml", openapi.YAML},
	} {
		t.Run(tt.path, func(t *testing.T) {
			// No key, or one that is not valid: the document needs none.
			for _, key := range []string{"", "not-a-key"} {
				r := s.Do(t, http.MethodGet, tt.path, key, nil)
				if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != tt.contentType || !bytes.Equal(r.Body, tt.body) {
					t.Fatalf("key %q: %d %q, %d bytes; want 200 %s with the embedded document",
						key, r.StatusCode, r.Header.Get("Content-Type"), len(r.Body), tt.contentType)
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

// The reference page's copy of the contract is the served document, outside
// /v1 and uncounted: it stays available to an address over its limit.
func TestReferencePageCopyIsUncounted(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{Limits: limits.Config{AnonymousPerMinute: 1, MinuteWindow: time.Hour}})
	s.Do(t, http.MethodGet, "/v1/openapi.json", "", nil)
	if r := s.Do(t, http.MethodGet, "/v1/openapi.json", "", nil); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second keyless request: %d, want 429", r.StatusCode)
	}
	for range 3 {
		r := s.Do(t, http.MethodGet, "/docs/openapi.json", "", nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || !bytes.Equal(r.Body, openapi.JSON) {
			t.Fatalf("/docs/openapi.json: %d %q, %d bytes; want 200 with the served document", r.StatusCode, r.Header.Get("Content-Type"), len(r.Body))
		}
		if r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("/docs/openapi.json carries rate-limit headers: %v", r.Header)
		}
	}
}
