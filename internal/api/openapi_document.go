package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/openapi"
)

// documentCacheControl lets clients reuse the document for a few minutes,
// then revalidate it with If-None-Match (a 304 costs no body). A document
// whose server is the request's own Host is cached by the client alone: a
// shared cache that keys on the path would hand one client's Host to the
// next.
const (
	documentCacheControl        = "public, max-age=300"
	derivedDocumentCacheControl = "private, max-age=300"
)

// maxDocumentCopies bounds the copies of a document kept for the base URLs
// requests reached. The Host header is the client's to choose: beyond the
// bound, a copy is made for its request alone.
const maxDocumentCopies = 16

// Documents are the OpenAPI document's served forms (package openapi makes
// them). JSON and YAML, under /v1, are for tools: their one server is the
// path of /v1 (/v1, or the public URL's path), which a reader resolves
// against the address it fetched the document from, so that a generator
// bakes no host into the code it writes (@hey-api/openapi-ts makes the
// first server its default baseUrl). Reference, the reference page's copy,
// names the service's base URL as its server, for people to read. All three
// name the base URL in their code samples.
type Documents struct {
	JSON, YAML, Reference *Document
}

// NewDocuments serves the document's forms for base.
func NewDocuments(base BaseURL) Documents {
	return Documents{
		JSON:      newDocument(func(b string) []byte { return openapi.ServedJSON(pathOf(b), b) }, "application/json", base),
		YAML:      newDocument(func(b string) []byte { return openapi.ServedYAML(pathOf(b), b) }, "application/yaml", base),
		Reference: newDocument(func(b string) []byte { return openapi.ServedJSON(b, b) }, "application/json", base),
	}
}

// pathOf is a base URL without its scheme and host.
func pathOf(base string) string {
	if _, rest, ok := strings.Cut(base, "://"); ok {
		return rest[strings.IndexByte(rest, '/'):] // a base URL ends in /v1
	}
	return base
}

// Document serves one form of the document with a strong ETag per copy;
// net/http's ServeContent answers If-None-Match (304), HEAD and ranges. With
// a public URL there is one copy, made at start-up; otherwise each base URL
// requested has its own, made once.
type Document struct {
	contentType string
	makeCopy    func(base string) []byte
	base        BaseURL

	mu     sync.RWMutex
	copies map[string]documentCopy
}

type documentCopy struct {
	body []byte
	etag string
}

func newDocument(makeCopy func(string) []byte, contentType string, base BaseURL) *Document {
	d := &Document{contentType: contentType, makeCopy: makeCopy, base: base, copies: map[string]documentCopy{}}
	if public := base.Public(); public != "" {
		d.copies[public] = newDocumentCopy(makeCopy(public))
	}
	return d
}

func newDocumentCopy(body []byte) documentCopy {
	sum := sha256.Sum256(body)
	return documentCopy{body: body, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// copyFor is the copy for a base URL, made and kept on its first request.
func (d *Document) copyFor(base string) documentCopy {
	d.mu.RLock()
	c, ok := d.copies[base]
	d.mu.RUnlock()
	if ok {
		return c
	}
	c = newDocumentCopy(d.makeCopy(base))
	d.mu.Lock()
	if len(d.copies) < maxDocumentCopies {
		d.copies[base] = c
	}
	d.mu.Unlock()
	return c
}

// Serve answers GET and HEAD with the copy for the request's base URL.
func (d *Document) Serve(e *core.RequestEvent) error {
	if err := noQuery(e.Request.URL.RawQuery); err != nil {
		return err
	}
	base, forwarded := d.base.of(e)
	c := d.copyFor(base)
	h := e.Response.Header()
	h.Set("Cache-Control", documentCacheControl)
	if d.base.Public() == "" {
		h.Set("Cache-Control", derivedDocumentCacheControl)
		h.Add("Vary", "Host")
	}
	if forwarded {
		h.Add("Vary", "X-Forwarded-Host, X-Forwarded-Proto")
	}
	h.Set("ETag", c.etag)
	h.Set("Content-Type", d.contentType)
	http.ServeContent(e.Response, e.Request, "", time.Time{}, bytes.NewReader(c.body))
	return nil
}
