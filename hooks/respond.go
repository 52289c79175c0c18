package hooks

import (
	"encoding/json"
	"net/http"
)

// writeJSON writes body as the whole JSON response. PocketBase's e.JSON is
// not used because it applies the ?fields= picker to 2xx bodies.
func writeJSON(w http.ResponseWriter, status int, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err = w.Write(append(data, '\n'))
	return err
}

// writeError writes err as the spec's Error body, keeping headers that
// middleware already set (WWW-Authenticate, Allow, Retry-After, rate limits).
func writeError(w http.ResponseWriter, err *Error) {
	_ = writeJSON(w, err.Status, err)
}
