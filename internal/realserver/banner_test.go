package realserver_test

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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

// On a first start, the hint names the binary as it was run and the data
// directory it was given (quoted for the shell), never `go run .` for a
// built binary; and running it as printed creates a superuser who signs in
// on this server.
func TestFirstStartHintCreatesTheSuperuserHere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop's data")
	p := start(t, dir)
	// PocketBase runs the installer in a goroutine of its own, after the banner.
	var hint []string
	for deadline := time.Now().Add(10 * time.Second); hint == nil; time.Sleep(20 * time.Millisecond) {
		hint = regexp.MustCompile(`\(you can also create your first superuser by running: (.+)\)`).FindStringSubmatch(p.Output())
		if hint == nil && time.Now().After(deadline) {
			t.Fatalf("no first-start hint:\n%s", p.Output())
		}
	}
	want := bin + ` superuser upsert EMAIL PASS --dir '` + strings.ReplaceAll(dir, "'", `'\''`) + `'`
	if hint[1] != want {
		t.Fatalf("the hint says %q, want %q", hint[1], want)
	}
	command := strings.NewReplacer("EMAIL", "first@example.org", "PASS", "'a long enough password'").Replace(hint[1])
	if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	status, body, err := p.Do(context.Background(), http.MethodPost, "/api/collections/_superusers/auth-with-password", "",
		[]byte(`{"identity":"first@example.org","password":"a long enough password"}`))
	if err != nil || status != http.StatusOK {
		t.Fatalf("the superuser the hint made cannot sign in here: %d %v %s", status, err, body)
	}
}
