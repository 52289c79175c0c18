package api

import (
	"encoding/json"
	"net/http"
)

// writeJSON writes body as the whole JSON response. PocketBase's e.JSON is
// not used because it applies the ?fields= picker to 2xx bodies.
func writeJSON(w http.ResponseWriter, status int, body any) error {
	data, err := encodeJSON(body)
	if err != nil {
		return err
	}
	return writeJSONBytes(w, status, data)
}

// encodeJSON is the body writeJSON writes for v.
func encodeJSON(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	return append(data, '\n'), err
}

// writeJSONBytes writes data, a body from encodeJSON, as the whole response.
func writeJSONBytes(w http.ResponseWriter, status int, data []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(data)
	return err
}

// writeError writes err as the spec's Error body, keeping headers that
// middleware already set (WWW-Authenticate, Allow, Retry-After, rate limits).
func writeError(w http.ResponseWriter, err *Error) {
	_ = writeJSON(w, err.Status, err)
}
