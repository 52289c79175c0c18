package hooks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"petstore/internal/version"
)

// NewVersionCommand is `petstore version`, the same line as --version.
func NewVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this build",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.Read())
		},
	}
}

// HealthcheckCommand is `petstore healthcheck`: GET /readyz and exit 0 when
// it answers 200, for a container's HEALTHCHECK (a scratch image has no
// curl). Err is its failure, which main turns into exit status 1.
type HealthcheckCommand struct {
	*cobra.Command
	err error
}

// Err is why the check failed, if it did.
func (c *HealthcheckCommand) Err() error { return c.err }

// NewHealthcheckCommand makes the command.
func NewHealthcheckCommand() *HealthcheckCommand {
	c := &HealthcheckCommand{}
	var url string
	var timeout time.Duration
	c.Command = &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the server at --url is ready (GET /readyz answers 200), else 1",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			c.err = checkReady(cmd.OutOrStdout(), url, timeout)
			if c.err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "petstore healthcheck:", c.err)
			}
		},
	}
	c.Flags().StringVar(&url, "url", "http://127.0.0.1:8090/readyz", "the readiness URL to check")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return c
}

func checkReady(out io.Writer, url string, timeout time.Duration) error {
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
	_, err = out.Write(body)
	return err
}
