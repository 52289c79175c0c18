// Package version names the running build: its version, the commit it was
// built from and the Go that built it, read from the build information Go
// embeds, so that a plain `go build` in a checkout names its commit.
package version

import (
	"fmt"
	"runtime/debug"
)

// Version and Commit are the release's version and commit, set by release
// builds (deploy/release.sh, deploy/build-image.sh, from deploy/version.sh
// and git):
//
//	go build -ldflags "-X petstore/internal/version.Version=v1.4.0 -X petstore/internal/version.Commit=$(git rev-parse HEAD)"
//
// Empty, the module version Go embeds is used (a pseudo-version made of the
// commit in a git checkout, "(devel)" without VCS stamping), and the commit
// Go embeds from the checkout; Commit names it when Go could
// embed none (a build with -buildvcs=false).
var (
	Version = ""
	Commit  = ""
)

// Info describes a build.
type Info struct {
	Version   string // v1.2.0, or Go's module version
	Revision  string // the commit, "unknown" when Go embedded none
	Modified  bool   // built from a checkout with uncommitted changes
	GoVersion string // go1.26.8
}

// Read returns the running binary's Info.
func Read() Info {
	info := Info{Version: Version, Revision: "unknown", GoVersion: "unknown"}
	if Commit != "" {
		info.Revision = Commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.GoVersion = bi.GoVersion
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the line `petstore version` prints.
func (i Info) String() string {
	revision := i.Revision
	if i.Modified {
		revision += " (modified)"
	}
	return fmt.Sprintf("petstore %s, commit %s, %s", i.Version, revision, i.GoVersion)
}
