package commands

import (
	"errors"
	"fmt"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/atrest"
	"petstore/internal/audit"
	"petstore/internal/datadir"
	"petstore/internal/webhooks"
)

// NewSecretsCommand returns `secrets rotate-key`, working on app's --dir.
// takeDataDir makes the command the directory's only user: a serving
// process keeps the old key in memory, and would seal new secrets with it.
func NewSecretsCommand(app core.App, takeDataDir func() error) *cobra.Command {
	c := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the key that encrypts the secrets kept at rest (webhook secrets, PocketBase's settings)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(secretsRotateKeyCommand(app, takeDataDir))
	return c
}

func secretsRotateKeyCommand(app core.App, takeDataDir func() error) *cobra.Command {
	var newKeyEnv string
	cmd := &cobra.Command{
		Use: "rotate-key --new-key-env VAR",
		Short: "Encrypt every secret at rest, and PocketBase's settings, with the key in VAR instead of the one --encryptionEnv names, " +
			"in one transaction; run it with the service stopped, then serve with --encryptionEnv VAR",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			to, err := atrest.FromVariable(newKeyEnv, "--new-key-env")
			if err != nil {
				return err
			}
			if to == nil {
				return errors.New("--new-key-env is required: the environment variable that holds the new key of 32 characters")
			}
			from, err := atrest.FromEnv(app)
			if err != nil {
				return err
			}
			if err := takeDataDir(); errors.Is(err, datadir.ErrInUse) {
				return fmt.Errorf("%s is in use: a petstore process (serve, or a command) has it open, and would keep the old key. "+
					"Stop every petstore on it, then rotate the key", app.DataDir())
			} else if err != nil {
				return err
			}
			// PocketBase applies migrations only in `serve`.
			if err := app.RunAllMigrations(); err != nil {
				return err
			}
			var endpoints int
			err = atrest.RunErasing(app, func(tx core.App) error {
				if endpoints, err = webhooks.ResealSecrets(tx, from, to); err != nil {
					return err
				}
				if err := atrest.ResealSettings(tx, from, to); err != nil {
					return err
				}
				return audit.Write(tx, audit.Entry{Action: audit.SecretsKeyRotated, By: audit.CLI,
					Details: map[string]any{"endpoints": endpoints, "settings": true, "keyEnv": newKeyEnv}})
			})
			if errors.Is(err, atrest.ErrWALKept) { // committed: the rotation is done
				fmt.Fprintln(cmd.ErrOrStderr(), "Warning:", err)
			} else if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Encrypted the secrets of %d webhook endpoints and PocketBase's settings with the key in %s. "+
				"Serve with --encryptionEnv %s from now on (or put that key in the variable it replaces): the old key opens nothing now.\n",
				endpoints, newKeyEnv, newKeyEnv)
			return nil
		},
	}
	cmd.Flags().StringVar(&newKeyEnv, "new-key-env", "", "the environment variable that holds the new key, 32 characters (required)")
	return cmd
}
