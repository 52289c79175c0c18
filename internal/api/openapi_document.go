package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"
)

// documentCacheControl lets clients reuse the document for a few minutes,
// then revalidate it with If-None-Match (a 304 costs no body).
const documentCacheControl = "public, max-age=300"

// ServeDocument serves a fixed document (the OpenAPI contract) with a strong
// ETag; net/http's ServeContent answers If-None-Match (304), HEAD and ranges.
func ServeDocument(body []byte, contentType string) func(*core.RequestEvent) error {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return func(e *core.RequestEvent) error {
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		h := e.Response.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", documentCacheControl)
		h.Set("Content-Type", contentType)
		http.ServeContent(e.Response, e.Request, "", time.Time{}, bytes.NewReader(body))
		return nil
	}
}
