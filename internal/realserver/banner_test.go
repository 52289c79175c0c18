package realserver_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// Every address the start banner prints answers when a newcomer opens it:
// none is a 404, the API's names a resource, and the reference is there.
func TestBannerAddressesAnswer(t *testing.T) {
	p := start(t, t.TempDir())
	out := p.Output()
	lines := regexp.MustCompile(`(?m)^[├└]─ ([A-Za-z ]+):\s+(http://\S+)`).FindAllStringSubmatch(out, -1)
	if len(lines) < 5 {
		t.Fatalf("the banner names %d addresses, want 5:\n%s", len(lines), out)
	}
	named := map[string]string{}
	for _, l := range lines {
		name, url := l[1], l[2]
		named[name] = url
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("%s %s: %v", name, url, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode >= 500 {
			t.Errorf("%s %s answers %d", name, url, resp.StatusCode)
		}
	}
	if api := named["API"]; !strings.HasSuffix(api, "/v1/pets") {
		t.Errorf("the banner's API address is %q, want …/v1/pets", api)
	}
	if ref := named["Reference"]; !strings.HasSuffix(ref, "/docs/") {
		t.Errorf("the banner's reference is %q, want …/docs/", ref)
	}
}
