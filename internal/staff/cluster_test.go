package staff_test

import (
	"net/http"
	"testing"

	"petstore/internal/apikeys"
)

// On a single server the cluster's route says so ({"cluster":null}, which
// the staff page shows as one line); it is read-only, and closed to
// anything but a superuser's token. The cluster's answer is checked through
// a real cluster (pb_public's TestStaffPageClusterInChromium).
func TestClusterRouteOnASingleServer(t *testing.T) {
	s := start(t)
	if r := s.Do(t, http.MethodGet, "/api/petstore/cluster", s.token, nil); r.StatusCode != http.StatusOK ||
		string(r.Body) != `{"cluster":null}`+"\n" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("GET: %d %s %v", r.StatusCode, r.Body, r.Header)
	}
	if r := s.Do(t, http.MethodPost, "/api/petstore/cluster", s.token, map[string]any{}); r.StatusCode == http.StatusOK {
		t.Errorf("POST: %d %s, want it refused", r.StatusCode, r.Body)
	}
	key := s.NewKey(t, apikeys.NewKey{})
	for _, token := range []string{"", key} {
		if r := s.Do(t, http.MethodGet, "/api/petstore/cluster", token, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET with %q: %d %s, want 401", token, r.StatusCode, r.Body)
		}
	}
}
