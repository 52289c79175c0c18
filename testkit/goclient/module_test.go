package goclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fenced returns the bodies of the blocks of markdown fenced as ```lang,
// in order.
func fenced(markdown, lang string) []string {
	var blocks []string
	rest := markdown
	for {
		_, after, ok := strings.Cut(rest, "\n```"+lang+"\n")
		if !ok {
			return blocks
		}
		body, tail, ok := strings.Cut(after, "\n```\n")
		if !ok {
			return blocks
		}
		blocks = append(blocks, body+"\n")
		rest = "\n" + tail
	}
}

// The steps docs/client.md gives for using the client from another module
// work as written: a module made of exactly its go.mod lines, beside a link
// to this checkout's client/ named as they name it, runs the commands of the block
// that follows them and builds the program the page shows, which then runs
// against the real binary (TestMain's). Offline, as go test must stay: the
// go command may use only the module cache (GOPROXY=off), whose modules were
// checked against the checksum database when they were downloaded
// (GOSUMDB=off).
func TestAnotherModuleUsesTheDocumentedLines(t *testing.T) {
	md, err := os.ReadFile("../../docs/client.md")
	if err != nil {
		t.Fatal(err)
	}
	gomods := fenced(string(md), "go-mod")
	if len(gomods) != 1 {
		t.Fatalf("docs/client.md has %d go.mod blocks (```go-mod), want 1", len(gomods))
	}
	_, afterGomod, _ := strings.Cut(string(md), gomods[0])
	commands := fenced(afterGomod, "sh")
	if len(commands) == 0 {
		t.Fatal("docs/client.md has no commands (```sh) after its go.mod lines")
	}
	var program string
	for _, block := range fenced(string(md), "go") {
		if strings.HasPrefix(block, "package main\n") {
			program = block
			break
		}
	}
	if program == "" {
		t.Fatal("docs/client.md shows no program (```go block with package main)")
	}

	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	shop := filepath.Join(dir, "shop")
	if err := os.Mkdir(shop, 0o755); err != nil {
		t.Fatal(err)
	}
	// The replace names the client's directory in a checkout beside the
	// module, as the page says: a link there to this one's.
	replace := ""
	for line := range strings.Lines(gomods[0]) {
		if target, ok := strings.CutPrefix(line, "replace petstore/client => "); ok {
			replace = strings.TrimSpace(target)
		}
	}
	if replace == "" || filepath.IsAbs(replace) || filepath.Base(replace) != "client" {
		t.Fatalf("the go.mod lines have no replace of petstore/client by a checkout's client directory:\n%s", gomods[0])
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(shop, replace)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "client"), filepath.Join(shop, replace)); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"go.mod": gomods[0], "main.go": program} {
		if err := os.WriteFile(filepath.Join(shop, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	env := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	for line := range strings.Lines(commands[0]) {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(line)
		if len(args) == 0 {
			continue
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = shop, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gomod, err := os.ReadFile(filepath.Join(shop, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(gomods[0]) {
		if !strings.Contains(string(gomod), line) {
			t.Errorf("the commands changed the documented line %q of go.mod:\n%s", line, gomod)
		}
	}
	if strings.Contains(string(gomod), "pocketbase") {
		t.Errorf("the client brings PocketBase into the module's requirements:\n%s", gomod)
	}
	// The client needs nothing but the standard library: no go.sum line.
	if sum, err := os.ReadFile(filepath.Join(shop, "go.sum")); err == nil && len(sum) > 0 {
		t.Errorf("the module's go.sum holds lines, the client needs none:\n%s", sum)
	}

	cmd := exec.Command(filepath.Join(shop, "shop"))
	cmd.Env = os.Environ() // PETSTORE_URL and PETSTORE_KEY, from TestMain
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the program: %v\n%s", err, out)
	}
	for _, want := range []string{"added Rex available\n", "sold: Ada\n", "sold: Bea\n", "sold: Cid\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the program printed %q, without %q", out, want)
		}
	}
}
