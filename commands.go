package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"petstore/internal/envflag"
	"petstore/internal/version"
)

// newVersionCommand is `petstore version`, the same line as --version.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this build",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.Read())
		},
	}
}

// healthcheckCommand is `petstore healthcheck`: GET /readyz and exit 0 when
// it answers 200, for a container's HEALTHCHECK (a scratch image has no
// curl). Err is its failure, which main turns into exit status 1.
type healthcheckCommand struct {
	*cobra.Command
	err error
}

// Err is why the check failed, if it did.
func (c *healthcheckCommand) Err() error { return c.err }

// newHealthcheckCommand makes the command. Without --url it checks the
// server that `serve` with the same environment listens on: the address of
// PETSTORE_HTTP, as serve reads it, else serve's default.
func newHealthcheckCommand() *healthcheckCommand {
	c := &healthcheckCommand{}
	var url string
	var timeout time.Duration
	c.Command = &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the server is ready (GET /readyz answers 200), else 1 with the reason on stderr",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target := localReadyz(os.Getenv(envflag.Name("http")))
			if url != "" {
				var err error
				if target, err = readyzOf(url); err != nil {
					return fmt.Errorf("invalid --url %q: %w", url, err)
				}
			}
			if timeout <= 0 {
				return fmt.Errorf("invalid --timeout %s: a duration above 0", timeout)
			}
			c.err = checkReady(target, timeout)
			if c.err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "petstore healthcheck:", c.err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&url, "url", "",
		"the server to check: its readiness URL, or its base URL (http://host:port, whose /readyz is checked); "+
			"by default the address of PETSTORE_HTTP, else 127.0.0.1:8090")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return c
}

// localReadyz is the readiness URL of a server listening on listen (serve's
// --http, HOST:PORT), reached from the same machine: a wildcard host is
// the loopback address.
func localReadyz(listen string) string {
	if listen == "" {
		return "http://127.0.0.1:8090/readyz"
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen + "/readyz"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}

// readyzOf is target, an http or https URL, or its /readyz when target is
// a base URL (no path).
func readyzOf(target string) (string, error) {
	u, err := neturl.Parse(target)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("an http:// or https:// URL, e.g. http://127.0.0.1:8090")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/readyz"
	}
	return u.String(), nil
}

// checkReady is nil when url answers 200; quiet on success, as a
// HEALTHCHECK's command is run every few seconds.
func checkReady(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, body)
	}
	return nil
}
