// Package banner tells people where a started petstore is: the lines serve
// prints at its start, and the first-start hint while there is no
// superuser.
package banner

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/osutils"
)

// Invocation is how a shell runs this binary again on the same data
// directory, for the commands the first-start hint prints.
type Invocation struct {
	// Binary is the binary as it was run: ./petstore, /usr/local/bin/petstore,
	// petstore from PATH.
	Binary string
	// GoRun says the binary was built and run by `go run .`, which removes
	// it on exit: the commands begin with "go run .".
	GoRun bool
	// Dir is the data directory given by --dir or PETSTORE_DIR; empty: the
	// default, which the binary finds again by itself.
	Dir string
}

// Command is the shell command running the binary with args on the data
// directory, each word quoted where a shell would read it otherwise.
func (i Invocation) Command(args ...string) string {
	words := []string{shellQuote(i.Binary)}
	if i.GoRun {
		words = []string{"go", "run", "."}
	}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	if i.Dir != "" {
		words = append(words, "--dir", shellQuote(i.Dir))
	}
	return strings.Join(words, " ")
}

// shellSafe are words that a POSIX shell reads as they are.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

func shellQuote(word string) string {
	if shellSafe.MatchString(word) {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

// Installer is serve's first-start hint in place of PocketBase's (which
// names `go run .` for any binary under the temporary directory, and no
// --dir): the installer link, whose token creates the first superuser in
// the dashboard, and the command that creates one on this data directory.
// With w nil (JSON logs), the hint is an event of log's, on stderr with the
// service's other events, not text on stdout.
func Installer(w io.Writer, log *slog.Logger, self Invocation) func(core.App, *core.Record, string) error {
	return func(_ core.App, superuser *core.Record, baseURL string) error {
		token, err := superuser.NewStaticAuthToken(30 * time.Minute)
		if err != nil {
			return err
		}
		url := strings.TrimRight(baseURL, "/") + "/_/#/pbinstall/" + token
		_ = osutils.LaunchURL(url) // as PocketBase does; the hint below is the way on a server
		command := self.Command("superuser", "upsert", "EMAIL", "PASS")
		if w == nil {
			log.Warn("No superuser yet: open the installer link within 30 minutes to create the first one, or run the command",
				"installerURL", url, "command", command)
			return nil
		}
		_, err = fmt.Fprintf(w, "\n(!) Launch the URL below in the browser if it hasn't been open already to create your first superuser account:\n%s\n"+
			"(you can also create your first superuser by running: %s)\n\n", url, command)
		return err
	}
}
