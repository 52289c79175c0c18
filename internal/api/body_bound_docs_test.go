package api

import (
	"fmt"
	"os"
	"regexp"
	"testing"
)

// The shipped nginx files say what /v1 bounds its bodies at, beside their
// client_max_body_size for the dashboard's uploads: the bound this package
// sets, and the figure its 413 names.
func TestNginxFilesNameTheBodyBound(t *testing.T) {
	want := fmt.Sprintf("%d KiB", maxBodyBytes>>10)
	said := regexp.MustCompile(`/v1 bounds\s+#?\s*its own bodies \(([^)]*)\)`)
	for _, file := range []string{"../../deploy/nginx.conf", "../../deploy/cluster/nginx.conf"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := said.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s does not say what /v1 bounds its bodies at", file)
		} else if string(m[1]) != want {
			t.Errorf("%s says /v1 bounds its bodies at %s; it bounds them at %s", file, m[1], want)
		}
	}
}
