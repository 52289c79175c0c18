package api

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
)

// writeJSON writes body as the whole JSON response. PocketBase's e.JSON is
// not used because it applies the ?fields= picker to 2xx bodies.
func writeJSON(w http.ResponseWriter, status int, body any) error {
	data, err := EncodeJSON(body)
	if err != nil {
		return err
	}
	return writeJSONBytes(w, status, data)
}

// EncodeJSON is the body writeJSON writes for v: what callees that keep
// answers (pets.Reads) keep. "<", ">" and "&" stay as they are: the body is
// JSON, never HTML, and \u003c in a message reads badly in a terminal.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v) // ends with a newline
	return b.Bytes(), err
}

// writeJSONBytes writes data, a body from EncodeJSON, as the whole response.
func writeJSONBytes(w http.ResponseWriter, status int, data []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(data)
	return err
}

// writeTaggedJSON writes data, a 200's body from EncodeJSON, with its
// etag (conditional.go), or 304 Not Modified without a body when the
// request's If-None-Match names etag. Both carry the ETag and
// Cache-Control: private, no-cache, which lets the client (never a shared
// cache: the answer is to an API key) keep the body and asks it to
// revalidate before each use; the headers set before (rate limits, request
// id, Link) are kept on both.
func writeTaggedJSON(e *core.RequestEvent, etag string, data []byte) error {
	h := e.Response.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	if noneMatch(e.Request.Header, etag) {
		e.Response.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	e.Response.WriteHeader(http.StatusOK)
	_, err := e.Response.Write(data)
	return err
}

// writeError writes err as the spec's Error body, keeping headers that
// middleware already set (WWW-Authenticate, Allow, Retry-After, rate limits).
func writeError(w http.ResponseWriter, err *Error) {
	_ = writeJSON(w, err.Status, err)
}

// WriteError writes the Error body of code and message with status: for
// answers made outside the /v1 routes' chain (cluster mode's gate).
func WriteError(w http.ResponseWriter, status int, code, message string) {
	writeError(w, newError(status, code, "%s", message))
}

// WriteJSON writes body as the whole JSON response, for answers made outside
// the routes' chain (cluster mode's gate).
func WriteJSON(w http.ResponseWriter, status int, body any) error {
	return writeJSON(w, status, body)
}
