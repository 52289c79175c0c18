package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/pocketbase/pocketbase/core"
)

// documentCacheControl lets clients reuse the document for a few minutes,
// then revalidate it with If-None-Match (a 304 costs no body).
const documentCacheControl = "public, max-age=300"

// serveDocument serves a fixed document (the OpenAPI contract) with a strong
// ETag; a matching If-None-Match gets 304.
func serveDocument(body []byte, contentType string) func(*core.RequestEvent) error {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(e *core.RequestEvent) error {
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		h := e.Response.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", documentCacheControl)
		if etagMatches(e.Request.Header.Values("If-None-Match"), etag) {
			e.Response.WriteHeader(http.StatusNotModified)
			return nil
		}
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		e.Response.WriteHeader(http.StatusOK)
		_, err := e.Response.Write(body) // net/http drops it for HEAD
		return err
	}
}

// etagMatches applies If-None-Match's weak comparison (RFC 9110, 13.1.2).
func etagMatches(ifNoneMatch []string, etag string) bool {
	for _, field := range ifNoneMatch {
		for _, tag := range strings.Split(field, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
