package docs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deployMention is a path under deploy/ as the pages write it, in a link
// (../deploy/nginx.conf) or in text (`deploy/cluster/`); deploy/ alone names
// the repository's folder, not a file.
var deployMention = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])deploy/([A-Za-z0-9_./-]*[A-Za-z0-9_/-])`)

// checkoutOnly are the files under deploy/ that the pages name but that the
// archives leave out: they build the binary or the image from the source
// tree (go build of the checkout), which an archive does not hold.
var checkoutOnly = []string{
	"deploy/Containerfile", "deploy/build-image.sh", "deploy/test-image.sh", "deploy/release.sh", "deploy/version.sh",
}

// The release holds what the pages promise and nothing else, built by
// deploy/release.sh, as CI builds it, for the host's platform alone.
//
// The archive: the binary, README.md, CHANGELOG.md, LICENSE, every page of
// docs/ and the OpenAPI document (so that the README's links to them work
// inside it), and every tracked file under deploy/ that README.md or a page
// names (a folder named stands for its files), but the checkout's build
// scripts.
//
// Beside it, the TypeScript client's package (petstore-client-X.Y.Z.tgz,
// package.json's version), in SHA256SUMS, with the licence, JavaScript whose
// source maps point at shipped sources, and what a fresh Node project
// installs from the file and loads, as an ES module and from CommonJS.
func TestReleaseHoldsWhatTheDocsName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	release(t, root, dist, "v0.0.0-test")
	t.Run("archive", func(t *testing.T) { checkArchive(t, root, dist) })
	t.Run("typescript package", func(t *testing.T) { checkTypeScriptPackage(t, root, dist) })
}

// checkArchive checks the host's archive in dist against the pages.
func checkArchive(t *testing.T, root, dist string) {
	want := map[string]bool{"README.md": true, "CHANGELOG.md": true, "LICENSE": true, "openapi/openapi.yaml": true, executable(): true}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		want["docs/"+filepath.Base(page)] = true
	}
	tracked := strings.Fields(git(t, root, nil, "ls-files", "--", "deploy"))
	for _, f := range checkoutOnly {
		if !slices.Contains(tracked, f) {
			t.Errorf("checkoutOnly names %s, which is not in the repository", f)
		}
	}
	for f := range namedDeployFiles(t, root, tracked) {
		if !slices.Contains(checkoutOnly, f) {
			want[f] = true
		}
	}

	name := fmt.Sprintf("petstore_v0.0.0-test_%s_%s", runtime.GOOS, runtime.GOARCH)
	got := map[string]bool{}
	for entry := range archiveFiles(t, filepath.Join(dist, name+".tar.gz")) {
		f, ok := strings.CutPrefix(entry, name+"/")
		if !ok {
			t.Errorf("the archive holds %s, outside %s/", entry, name)
			continue
		}
		got[f] = true
	}
	for f := range want {
		if !got[f] {
			t.Errorf("the archive lacks %s, which the docs promise (add it to deploy/release.sh's files)", f)
		}
	}
	for f := range got {
		switch {
		case slices.Contains(checkoutOnly, f):
			t.Errorf("the archive holds %s, which builds from a checkout and does nothing in an archive", f)
		case !want[f]:
			t.Errorf("the archive holds %s, which neither README.md nor docs/*.md names (name it, or drop it from deploy/release.sh)", f)
		}
	}
}

// checkTypeScriptPackage checks the TypeScript client's package in dist.
func checkTypeScriptPackage(t *testing.T, root, dist string) {
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(root, "clients", "typescript", "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	name := "petstore-client-" + pkg.Version + ".tgz"
	tarball := filepath.Join(dist, name)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sums), " ./"+name+"\n") {
		t.Errorf("SHA256SUMS does not name %s:\n%s", name, sums)
	}

	files := map[string][]byte{}
	walkArchive(t, tarball, func(h *tar.Header, r io.Reader) bool {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "package/")] = b
		return true
	})
	licence, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files["LICENSE"], licence) {
		t.Errorf("%s holds no LICENSE, or another than the repository's", name)
	}
	var shipped struct{ License, Version string }
	if err := json.Unmarshal(files["package.json"], &shipped); err != nil || shipped.License != "MIT" || shipped.Version != pkg.Version {
		t.Errorf("%s's package.json: %v, licence %q, version %q; want MIT and %s", name, err, shipped.License, shipped.Version, pkg.Version)
	}
	maps := 0
	for f, b := range files {
		if !strings.HasSuffix(f, ".js.map") {
			continue
		}
		maps++
		var m struct{ Sources []string }
		if err := json.Unmarshal(b, &m); err != nil || len(m.Sources) == 0 {
			t.Errorf("%s: %v, sources %q", f, err, m.Sources)
		}
		for _, src := range m.Sources {
			if target := path.Join(path.Dir(f), src); files[target] == nil {
				t.Errorf("%s points at %s, which the package does not ship", f, target)
			}
		}
	}
	if files["dist/index.js"] == nil || files["dist/index.d.ts"] == nil || maps == 0 {
		t.Errorf("%s lacks dist/index.js, dist/index.d.ts or source maps: %d files", name, len(files))
	}

	// A fresh Node project installs the file (the package has no runtime
	// dependency: nothing is fetched) and loads it both ways.
	project := t.TempDir()
	for _, args := range [][]string{
		{"npm", "init", "-y"},
		{"npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball},
	} {
		if out, err := command(project, nil, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	const use = `new PetstoreClient({ baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" }); console.log(VERSION);`
	for kind, args := range map[string][]string{
		"ES module": {"--input-type=module", "-e", `import { PetstoreClient, VERSION } from "@petstore/client"; ` + use},
		"CommonJS":  {"--input-type=commonjs", "-e", `import("@petstore/client").then(({ PetstoreClient, VERSION }) => { ` + use + ` });`},
	} {
		out, err := command(project, nil, "node", args...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != pkg.Version {
			t.Errorf("%s loading the installed package: %v, printed %q; want %s", kind, err, out, pkg.Version)
		}
	}
}

// namedDeployFiles are the tracked files under deploy/ that README.md and
// docs/*.md name, a folder standing for the files in it.
func namedDeployFiles(t *testing.T, root string, tracked []string) map[string]bool {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, page := range append(pages, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range deployMention.FindAllStringSubmatch(string(b), -1) {
			path := "deploy/" + strings.TrimSuffix(m[1], "/")
			for _, f := range tracked {
				if f == path || strings.HasPrefix(f, path+"/") {
					named[f] = true
				}
			}
		}
	}
	return named
}

// A build from an annotated tag prints the tag: in a clone of this commit
// (HEAD; the working tree's uncommitted changes are not in it), before any
// tag deploy/version.sh says the build is a dev one, an annotated v9.8.7
// names it, the release build (deploy/release.sh, for the host alone)
// stamps it into the binary that `petstore version` and `petstore
// --version` print, and a commit after the tag (even with a lightweight tag
// on it, which is no release) and an uncommitted change show in the version.
func TestTaggedBuildPrintsItsTag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(git(t, root, nil, "rev-parse", "HEAD"))
	clone := filepath.Join(t.TempDir(), "petstore")
	// Git's identity for the tag and the commit; the user's configuration
	// (tag signing, hooks) stays out.
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release@test.invalid",
		"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release@test.invalid"}
	git(t, root, nil, "clone", "--quiet", "--shared", "--no-tags", "--no-checkout", root, clone)
	git(t, clone, env, "checkout", "--quiet", "--detach", head)
	short := func() string { return strings.TrimSpace(git(t, clone, env, "rev-parse", "--short=7", "HEAD")) }
	versionSh := func() string {
		out, err := command(clone, env, "bash", "deploy/version.sh").Output()
		if err != nil {
			t.Fatalf("deploy/version.sh: %v", err)
		}
		return strings.TrimSpace(string(out))
	}

	if got, want := versionSh(), "v0.0.0-dev-g"+short(); got != want {
		t.Errorf("untagged: deploy/version.sh says %q, want %q", got, want)
	}
	// A plain go build in the checkout (VCS stamping on, whatever GOFLAGS
	// says) prints the pseudo-version Go makes of the commit, as
	// docs/operations.md says.
	plain := filepath.Join(t.TempDir(), executable())
	if out, err := command(clone, nil, "go", "build", "-buildvcs=true", "-o", plain, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := command(clone, nil, plain, "version").CombinedOutput()
	pseudo := regexp.MustCompile(`^petstore v0\.0\.0-[0-9]{14}-` + regexp.QuoteMeta(head[:12]) + `, commit ` + head + `, go`)
	if err != nil || !pseudo.Match(out) {
		t.Errorf("a plain go build's petstore version: %v %q, want a line matching %v", err, out, pseudo)
	}
	git(t, clone, env, "tag", "-a", "v9.8.7", "-m", "petstore v9.8.7")
	if got := versionSh(); got != "v9.8.7" {
		t.Errorf("tagged v9.8.7: deploy/version.sh says %q", got)
	}

	dist := t.TempDir()
	release(t, clone, dist, "")
	name := fmt.Sprintf("petstore_v9.8.7_%s_%s", runtime.GOOS, runtime.GOARCH)
	binary := extract(t, filepath.Join(dist, name+".tar.gz"), name+"/"+executable())
	want := "petstore v9.8.7, commit " + head + ", go"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := command(clone, nil, binary, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("petstore %s: %v\n%s", args[0], err, out)
		}
		if !strings.HasPrefix(string(out), want) {
			t.Errorf("petstore %s prints %q, want a line starting %q", args[0], out, want)
		}
	}

	git(t, clone, env, "commit", "--quiet", "--allow-empty", "-m", "after the release")
	git(t, clone, env, "tag", "v9.9.0")
	if got, want := versionSh(), "v9.8.7-1-g"+short(); got != want {
		t.Errorf("one commit after v9.8.7, tagged v9.9.0 without -a: deploy/version.sh says %q, want %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(clone, "LICENSE"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := versionSh(), "v9.8.7-1-g"+short()+"-dirty"; got != want {
		t.Errorf("with an uncommitted change: deploy/version.sh says %q, want %q", got, want)
	}
}

// The changelog's released sections are the repository's release tags:
// every annotated v* tag has its section, the newest section is the newest
// tag, and the headings have the form the changelog's introduction gives.
func TestChangelogSectionsAreTheTags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var tags []gitTag
	for _, line := range strings.Split(strings.TrimSpace(git(t, "..", nil, "for-each-ref",
		"--format=%(objecttype) %(refname:strip=2)", "refs/tags/v*")), "\n") {
		if kind, name, ok := strings.Cut(line, " "); ok {
			tags = append(tags, gitTag{name: name, annotated: kind == "tag"})
		}
	}
	for _, err := range checkReleases(changelogHeadings(string(b)), tags) {
		t.Error(err)
	}
}

func TestCheckReleases(t *testing.T) {
	good := []string{"Unreleased", "v1.1.0 - 2026-12-07", "v1.0.0 - 2026-11-30"}
	tags := []gitTag{{"v1.0.0", true}, {"v1.1.0", true}}
	for _, c := range []struct {
		name     string
		headings []string
		tags     []gitTag
		want     string // in the one error; "" for none
	}{
		{"no tags yet", []string{"Unreleased"}, nil, ""},
		{"sections before the first tag", good, nil, ""},
		{"every tag its section", good, tags, ""},
		{"Unreleased not first", []string{"v1.0.0 - 2026-11-30", "Unreleased"}, nil, `"Unreleased" first`},
		{"no Unreleased", []string{"v1.0.0 - 2026-11-30"}, nil, `"Unreleased" first`},
		{"a heading without its date", []string{"Unreleased", "v1.0.0"}, nil, `"v1.0.0"`},
		{"a bracketed version", []string{"Unreleased", "[1.0.0] - 2026-11-30"}, nil, `"[1.0.0] - 2026-11-30"`},
		{"an impossible date", []string{"Unreleased", "v1.0.0 - 2026-13-01"}, nil, "2026-13-01"},
		{"oldest first", []string{"Unreleased", "v1.0.0 - 2026-11-30", "v1.1.0 - 2026-12-07"}, nil, "v1.1.0 after v1.0.0"},
		{"a tag without its section", good, append(tags, gitTag{"v1.2.0", true}), "v1.2.0 has no section"},
		{"a section newer than the newest tag", good, tags[:1], "newest section v1.1.0 is not the newest tag v1.0.0"},
		{"a lightweight release tag", good, append(tags, gitTag{"v1.2.0", false}), "v1.2.0 is a lightweight tag"},
		{"a tag that is no release", good, append(tags, gitTag{"v1.2", true}), `"v1.2" is not a release version`},
	} {
		errs := checkReleases(c.headings, c.tags)
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", c.name, errs)
		case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want)):
			t.Errorf("%s: got %v, want one error saying %q", c.name, errs, c.want)
		}
	}
}

// gitTag is a tag under refs/tags/v*.
type gitTag struct {
	name      string
	annotated bool
}

var (
	releaseHeading = regexp.MustCompile(`^(v[0-9]+\.[0-9]+\.[0-9]+) - ([0-9]{4}-[0-9]{2}-[0-9]{2})$`)
	releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
	sectionHeading = regexp.MustCompile(`(?m)^## +(.+?)\s*$`)
)

// changelogHeadings are the changelog's second-level headings, in order.
func changelogHeadings(changelog string) []string {
	var headings []string
	for _, m := range sectionHeading.FindAllStringSubmatch(fence.ReplaceAllString(changelog, ""), -1) {
		headings = append(headings, m[1])
	}
	return headings
}

// checkReleases says where the changelog's headings and the release tags
// disagree: "Unreleased" first, then "vX.Y.Z - YYYY-MM-DD", newest first;
// each v* tag annotated and a release version with its section; the newest
// section the newest tag, once there is a tag.
func checkReleases(headings []string, tags []gitTag) []error {
	var errs []error
	if len(headings) == 0 || headings[0] != "Unreleased" {
		errs = append(errs, errors.New(`CHANGELOG.md: the sections start with "Unreleased" first`))
	}
	var sections []string
	for _, h := range headings {
		if h == "Unreleased" {
			continue
		}
		m := releaseHeading.FindStringSubmatch(h)
		if m == nil || !releaseVersion.MatchString(m[1]) {
			errs = append(errs, fmt.Errorf(`CHANGELOG.md: heading %q is not "vX.Y.Z - YYYY-MM-DD"`, h))
			continue
		}
		if _, err := time.Parse(time.DateOnly, m[2]); err != nil {
			errs = append(errs, fmt.Errorf("CHANGELOG.md: %s's date %s is not a date", m[1], m[2]))
			continue
		}
		if n := len(sections); n > 0 && !versionLess(m[1], sections[n-1]) {
			errs = append(errs, fmt.Errorf("CHANGELOG.md: %s after %s: sections go newest first", m[1], sections[n-1]))
		}
		sections = append(sections, m[1])
	}
	newestTag := ""
	for _, tag := range tags {
		switch {
		case !releaseVersion.MatchString(tag.name):
			errs = append(errs, fmt.Errorf("tag %q is not a release version (vX.Y.Z)", tag.name))
		case !tag.annotated:
			errs = append(errs, fmt.Errorf("%s is a lightweight tag: a release is an annotated one (git tag -a)", tag.name))
		case !slices.Contains(sections, tag.name):
			errs = append(errs, fmt.Errorf("tag %s has no section in CHANGELOG.md", tag.name))
		case newestTag == "" || versionLess(newestTag, tag.name):
			newestTag = tag.name
		}
	}
	if newestTag != "" && len(sections) > 0 && sections[0] != newestTag {
		errs = append(errs, fmt.Errorf("CHANGELOG.md's newest section %s is not the newest tag %s: tag its commit (git tag -a %s)",
			sections[0], newestTag, sections[0]))
	}
	return errs
}

// versionLess orders release versions (vX.Y.Z) by their numbers.
func versionLess(a, b string) bool {
	numbers := func(v string) []int {
		var n []int
		for _, part := range strings.Split(strings.TrimPrefix(v, "v"), ".") {
			i, _ := strconv.Atoi(part)
			n = append(n, i)
		}
		return n
	}
	return slices.Compare(numbers(a), numbers(b)) < 0
}

// release runs deploy/release.sh in root for the host's platform, into dist.
func release(t *testing.T, root, dist, version string) {
	t.Helper()
	args := []string{"deploy/release.sh"}
	if version != "" {
		args = append(args, version)
	}
	env := []string{"RELEASE_TARGETS=" + runtime.GOOS + "/" + runtime.GOARCH, "RELEASE_DIST=" + dist}
	if out, err := command(root, env, "bash", args...).CombinedOutput(); err != nil {
		t.Fatalf("deploy/release.sh: %v\n%s", err, out)
	}
}

// archiveFiles yields the names of a .tar.gz's regular files.
func archiveFiles(t *testing.T, archive string) func(func(string) bool) {
	return func(yield func(string) bool) {
		walkArchive(t, archive, func(h *tar.Header, _ io.Reader) bool { return yield(h.Name) })
	}
}

// extract writes one file of a .tar.gz to a temporary directory, executable,
// and returns its path.
func extract(t *testing.T, archive, name string) string {
	t.Helper()
	path := ""
	walkArchive(t, archive, func(h *tar.Header, r io.Reader) bool {
		if h.Name != name {
			return true
		}
		path = filepath.Join(t.TempDir(), filepath.Base(name))
		b, err := io.ReadAll(r)
		if err == nil {
			err = os.WriteFile(path, b, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		return false
	})
	if path == "" {
		t.Fatalf("%s holds no %s", archive, name)
	}
	return path
}

// walkArchive calls visit with each regular file of a .tar.gz until it
// returns false.
func walkArchive(t *testing.T, archive string, visit func(*tar.Header, io.Reader) bool) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if h.Typeflag == tar.TypeReg && !visit(h, tr) {
			return
		}
	}
}

// executable is the binary's name in the host's archive.
func executable() string {
	if runtime.GOOS == "windows" {
		return "petstore.exe"
	}
	return "petstore"
}

// git runs git in dir and returns its output, failing the test on an error.
func git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := command(dir, env, "git", args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// command is name with args in dir, with env added to the test's.
func command(dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
