package realserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"petstore/testkit/realserver"
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
	// The staff page holds more than the keys: the banner names each part.
	if !regexp.MustCompile(`(?m)^├─ Staff page:\s+\S+/staff/ \(API keys, customers, categories, webhooks\)$`).MatchString(out) {
		t.Errorf("the banner's staff page line does not name its parts:\n%s", out)
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

// With JSON logs every line on stderr is one JSON object: the first-start
// hint is an event there, not text on stdout, and a start that fails (its
// address taken) is one event at ERROR, with exit status 1.
func TestJSONLogsCarryTheHintAndTheFailure(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "--log-format", "json")
	var hint map[string]any
	for deadline := time.Now().Add(10 * time.Second); hint == nil; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(p.Output(), "\n") {
			var event map[string]any
			if json.Unmarshal([]byte(line), &event) == nil && strings.HasPrefix(fmt.Sprint(event["msg"]), "No superuser yet") {
				hint = event
			}
		}
		if hint == nil && time.Now().After(deadline) {
			t.Fatalf("no first-start event:\n%s", p.Output())
		}
	}
	if url := fmt.Sprint(hint["installerURL"]); !strings.Contains(url, "/_/#/pbinstall/") || hint["level"] != "WARN" ||
		!strings.Contains(fmt.Sprint(hint["command"]), "superuser upsert EMAIL PASS --dir") {
		t.Errorf("the first-start event: %v", hint)
	}

	stdout, stderr, err := realserver.Run(bin, t.TempDir(), "serve", "--http", p.Addr, "--log-format", "json")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || strings.Contains(stdout, "pbinstall") {
		t.Fatalf("serve on a taken address: %v; stdout %q", err, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("not a JSON object on stderr: %q", line)
		}
	}
	var last map[string]any
	if json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last["level"] != "ERROR" ||
		!strings.Contains(fmt.Sprint(last["error"]), "address already in use") {
		t.Errorf("the failure's event: %s", lines[len(lines)-1])
	}
}
