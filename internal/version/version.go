// Package version names the running build: its version, the commit it was
// built from and the Go that built it, read from the build information Go
// embeds, so that a plain `go build` in a checkout names its commit.
package version

import (
	"fmt"
	"runtime/debug"
)

// Version is the release's version, set by release builds:
//
//	go build -ldflags "-X petstore/internal/version.Version=v1.2.0"
//
// Empty, the module version Go embeds is used ("(devel)" in a checkout).
var Version = ""

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
