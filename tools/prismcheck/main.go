// Command prismcheck is CI's check that the served OpenAPI document says what
// the server does, by a validator nobody here wrote: Stoplight's Prism (the
// CLI pinned in .ci/prism) runs as a validating proxy in front of the real
// binary, with the document the binary serves at /v1/openapi.yaml, and a
// few hundred varied exchanges go through it: every operation, its successes
// and its refusals (400, 401, 403, 413, 415, 422, 429, 304), paging through
// Link, both copies of the document, and a cluster node's 503 not_leader. It fails on any violation Prism
// reports (its sl-violations header, or a problem answer of its own instead
// of the server's) and on any answer but the one an exchange expects.
//
// Prism passes on only what the document has an operation for, and not all
// of that. HEAD (which the document describes in prose, not as operations),
// a method a path does not have (405), a path outside the document (404), a
// request without an Authorization header (Prism answers its own 401), a GET
// with a body (Prism refuses to forward one: stoplightio/prism#2259) and a
// JSON body that does not parse (Prism never answers) go to the binary
// directly instead, checked by the rules every test's exchanges are held to
// (testkit/contract). Before all that, Prism must find the violation in a
// copy of the document made wrong on purpose, so that a Prism that
// validates nothing cannot pass.
//
// It runs in CI only, after `npm ci` in .ci/prism; `go test ./...` stays
// offline:
//
//	(cd .ci/prism && npm ci) && go run ./tools/prismcheck
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"petstore/testkit/realserver"
)

func main() {
	prism := flag.String("prism", ".ci/prism/node_modules/.bin/prism", "the Prism CLI (@stoplight/prism-cli 5.16.0), relative to the module's root")
	flag.Parse()
	if err := run(*prism); err != nil {
		fmt.Fprintln(os.Stderr, "prismcheck:", err)
		os.Exit(1)
	}
}

// keys are the API keys the exchanges use, one per kind of refusal.
type keys struct {
	writer   string // business, pets:read and pets:write
	reader   string // pets:read only: createPet gets 403
	creator  string // pets:write only: the reads get 403
	limited  string // free, 3 requests a minute: the fourth gets 429
	revoked  string // revoked: 401
	category []int64
}

func run(prismCLI string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if !filepath.IsAbs(prismCLI) {
		prismCLI = filepath.Join(root, prismCLI)
	}
	if _, err := os.Stat(prismCLI); err != nil {
		return fmt.Errorf("%w: run npm ci in .ci/prism first", err)
	}
	tmp, err := os.MkdirTemp("", "petstore-prismcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := realserver.Build(tmp)
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "pb_data")
	k, err := makeKeys(bin, dir)
	if err != nil {
		return err
	}
	p, err := realserver.Start(bin, dir)
	if err != nil {
		return err
	}
	defer p.Kill()

	if err := prismSeesAViolation(prismCLI, tmp, p.URL+"/v1"); err != nil {
		return err
	}
	doc := filepath.Join(tmp, "openapi.yaml")
	if err := download(p.URL+"/v1/openapi.yaml", doc); err != nil {
		return err
	}
	prismURL, stop, err := startPrism(prismCLI, doc, p.URL+"/v1")
	if err != nil {
		return err
	}
	defer stop()

	c, err := newChecker(prismURL, p.URL+"/v1")
	if err != nil {
		return err
	}
	c.exchangeAll(k)
	if err := notLeader(c, prismCLI, bin, tmp, doc); err != nil {
		return err
	}
	c.report(os.Stdout)
	if len(c.failures) > 0 {
		return fmt.Errorf("%d of %d exchanges failed:\n%s", len(c.failures), c.total(), strings.Join(c.failures, "\n"))
	}
	return nil
}

// makeKeys creates the keys and three named categories in the data
// directory, before the server starts.
func makeKeys(bin, dir string) (keys, error) {
	var k keys
	var err error
	for _, made := range []struct {
		key  *string
		args []string
	}{
		{&k.writer, []string{"--plan", "business"}},
		{&k.reader, []string{"--plan", "business", "--scopes", "pets:read"}},
		{&k.creator, []string{"--plan", "business", "--scopes", "pets:write"}},
		{&k.limited, []string{"--plan", "free", "--per-minute", "3"}},
	} {
		if *made.key, _, err = realserver.CreateKey(bin, dir, made.args...); err != nil {
			return k, err
		}
	}
	var id string
	if k.revoked, id, err = realserver.CreateKey(bin, dir, "--plan", "business"); err != nil {
		return k, err
	}
	if _, _, err := realserver.Keys(bin, dir, "revoke", id); err != nil {
		return k, err
	}
	for i, name := range []string{"Cats", "Dogs", "Fish"} {
		id := int64(3 + 4*i)
		if _, _, err := realserver.Run(bin, dir, "categories", "create", "--id", fmt.Sprint(id), "--name", name); err != nil {
			return k, err
		}
		k.category = append(k.category, id)
	}
	return k, nil
}

// prismSeesAViolation makes sure that Prism, as run here, reports what it
// should: with a copy of the served document that gives the YAML document
// an object schema (the mistake Prism once found in it), the YAML
// document's answer must be reported as a violation. Without this, a
// Prism that validated nothing would pass every exchange.
func prismSeesAViolation(cli, tmp, upstream string) error {
	data, err := get(upstream + "/openapi.json")
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	media, ok := dig(doc, "paths", "/openapi.yaml", "get", "responses", "200", "content", "application/yaml")
	if !ok {
		return errors.New("the served document has no application/yaml answer for GET /openapi.yaml")
	}
	media["schema"] = map[string]any{"type": "object"}
	wrong := filepath.Join(tmp, "wrong.json")
	if data, err = json.Marshal(doc); err != nil {
		return err
	}
	if err := os.WriteFile(wrong, data, 0o644); err != nil {
		return err
	}
	prismURL, stop, err := startPrism(cli, wrong, upstream)
	if err != nil {
		return err
	}
	defer stop()
	resp, err := http.Get(prismURL + "/openapi.yaml")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.Header.Get("sl-violations") == "" {
		return fmt.Errorf("prism reports no violation for a YAML body given an object schema (status %s): it validates nothing here", resp.Status)
	}
	return nil
}

// dig is the object at the path of keys in v, a decoded JSON document.
func dig(v map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		next, ok := v[k].(map[string]any)
		if !ok {
			return nil, false
		}
		v = next
	}
	return v, true
}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func download(url, file string) error {
	data, err := get(url)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// startPrism runs `prism proxy` with the document in front of upstream on a
// free loopback port, with request validation off (the exchanges break the
// request rules on purpose, to see the server refuse them) and --errors,
// which turns a violation into Prism's own 500. It returns Prism's URL,
// which stands for upstream, and the function that stops it.
func startPrism(cli, doc, upstream string) (string, func(), error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(cli, "proxy", doc, upstream, "--errors", "--validate-request=false", "--host", host, "--port", port)
	// Prism and any process it starts form a group of their own, which stop
	// ends as one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	listening := make(chan error, 1)
	go func() {
		var log strings.Builder
		lines := bufio.NewScanner(out)
		ready := false
		for lines.Scan() {
			if !ready {
				log.WriteString(lines.Text() + "\n")
				if strings.Contains(lines.Text(), "Prism is listening") {
					ready = true
					listening <- nil
				}
			}
		}
		if !ready {
			listening <- fmt.Errorf("prism proxy exited before listening:\n%s", log.String())
		}
	}()
	select {
	case err := <-listening:
		if err != nil {
			stop()
			return "", nil, err
		}
	case <-time.After(2 * time.Minute):
		stop()
		return "", nil, errors.New("prism proxy did not listen within 2 minutes")
	}
	return "http://" + addr, stop, nil
}

// ctx bounds each exchange.
func exchangeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}
