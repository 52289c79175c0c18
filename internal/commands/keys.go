package commands

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
	"github.com/spf13/cobra"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/rollgrace"
	"petstore/internal/strictinput"
	"petstore/internal/usage"
)

// KeysCommand is the `keys` command tree. PocketBase ignores the error that
// cobra returns, so KeysCommand keeps it for main to turn into a non-zero
// exit status.
type KeysCommand struct {
	*cobra.Command
	err error
}

// Err is the error of the last run, if any: a failed command or a bad flag.
func (c *KeysCommand) Err() error { return c.err }

// NewKeysCommand returns `keys create|list|revoke|roll|expire|unban`,
// working on app's --dir.
func NewKeysCommand(app core.App) *KeysCommand {
	c := &KeysCommand{}
	c.Command = &cobra.Command{
		Use:           "keys",
		Short:         "Create, list, revoke, roll, expire and unban /v1 API keys",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
		// PocketBase applies migrations only in `serve`.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return c.fail(app.RunAllMigrations())
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return c.fail(err) })
	c.AddCommand(c.createCommand(app), c.listCommand(app), c.revokeCommand(app), c.rollCommand(app),
		c.expireCommand(app), c.unbanCommand(app))
	// Every way a run can fail (arguments, then the run itself) goes through fail.
	for _, sub := range append(c.Commands(), c.Command) {
		run, args := sub.RunE, sub.Args
		sub.SilenceUsage, sub.SilenceErrors = true, true // fail prints the error
		sub.Args = func(cmd *cobra.Command, a []string) error { return c.fail(args(cmd, a)) }
		sub.RunE = func(cmd *cobra.Command, a []string) error { return c.fail(run(cmd, a)) }
	}
	return c
}

func (c *KeysCommand) fail(err error) error {
	if err != nil {
		c.err = err
		fmt.Fprintln(c.ErrOrStderr(), "Error:", err)
	}
	return err
}

func (c *KeysCommand) createCommand(app core.App) *cobra.Command {
	var nk apikeys.NewKey
	var expires string
	var scopes []string
	cmd := &cobra.Command{
		Use:   "create --plan PLAN --name NAME [--scopes pets:read,pets:write]",
		Short: "Create a key and print it once (alone on stdout's first line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nk.Plan == "" {
				names, err := apikeys.PlanNames(app)
				if err != nil {
					return err
				}
				return fmt.Errorf("--plan is required: %s", names)
			}
			if expires != "" {
				t, err := parseTime("--expires", expires)
				if err != nil {
					return err
				}
				nk.Expires = t
			}
			if cmd.Flags().Changed("scopes") {
				var err error
				if nk.Scopes, err = apikeys.ParseScopes(scopes); err != nil {
					return fmt.Errorf("--scopes: %w", err)
				}
			}
			key, k, err := apikeys.Create(app, nk, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			fmt.Fprintf(cmd.ErrOrStderr(), "Created API key %s (id %s, plan %s) with the scopes %s. Store it now: it is not shown again.\n",
				k.Prefix()+"…", k.Id, nk.Plan, apikeys.ScopeList(k.Scopes()))
			return nil
		},
	}
	cmd.Flags().StringVar(&nk.Plan, "plan", "", "the key's plan: the name of a record of the plans collection, e.g. free (required)")
	cmd.Flags().StringVar(&nk.Name, "name", "", "who uses the key, e.g. \"the shop's website\" (required)")
	cmd.Flags().IntVar(&nk.PerMinute, "per-minute", 0, "per-minute quota overriding the plan's")
	cmd.Flags().IntVar(&nk.PerDay, "per-day", 0, "per-day quota overriding the plan's")
	cmd.Flags().StringVar(&expires, "expires", "", "expiry time, RFC 3339 (default: never)")
	cmd.Flags().StringSliceVar(&scopes, "scopes", apikeys.ScopeNames(apikeys.Scopes),
		"what the key may do, comma-separated: pets:read (list and get pets), pets:write (add pets)")
	return cmd
}

func (c *KeysCommand) listCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List keys (never the keys themselves) with their scopes, and the requests served and refused today (UTC)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys, err := apikeys.List(app)
			if err != nil {
				return err
			}
			now := time.Now()
			// As the servers saved them, every few seconds: served requests are
			// what the day quota counts.
			today, err := usage.Saved(app, now)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPREFIX\tPLAN\tSTATE\tSCOPES\tEXPIRES\tLAST USED\tSERVED TODAY\tREFUSED TODAY")
			for _, k := range keys {
				plan := ""
				if p := k.Plan(); p != nil {
					plan = p.Name()
				}
				counts := today[k.Id]
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", k.Id, orDash(printable(k.Name())),
					k.Prefix()+"…", plan, k.State(now), strings.Join(apikeys.ScopeNames(k.Scopes()), ","),
					orDash(dateOrEmpty(k.Expires())), orDash(dateOrEmpty(k.LastUsed())), counts.Admitted(), counts.Limited)
			}
			return w.Flush()
		},
	}
}

func (c *KeysCommand) revokeCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key; it is refused from the next request on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := apikeys.Revoke(app, args[0], audit.CLI); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Revoked API key %s.\n", args[0])
			return nil
		},
	}
}

func (c *KeysCommand) rollCommand(app core.App) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "roll ID [--grace 24h]",
		Short: "Give a key a new secret and print it once (alone on stdout's first line); the old one works for --grace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, k, err := apikeys.Roll(app, args[0], grace, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			old := "The old key is refused from now on."
			if prefix, until := k.Previous(); !until.IsZero() {
				old = fmt.Sprintf("The old key %s… works until %s.", prefix, until.Format(time.RFC3339))
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Rolled API key %s: new key %s…. %s Store the new key now: it is not shown again.\n",
				k.Id, k.Prefix(), old)
			return nil
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", rollgrace.Default, "how long the old key keeps working, from 0 (not at all) to 720h (30 days)")
	return cmd
}

func (c *KeysCommand) expireCommand(app core.App) *cobra.Command {
	var at string
	var never bool
	cmd := &cobra.Command{
		Use:   "expire ID --at TIME|--never",
		Short: "Set, move or remove a key's expiry (the one way to change it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (at == "") == !never {
				return errors.New("give either --at TIME (RFC 3339, in the future) or --never")
			}
			var expires time.Time
			if !never {
				var err error
				if expires, err = parseTime("--at", at); err != nil {
					return err
				}
			}
			if _, err := apikeys.Change(app, args[0], apikeys.Changes{Expires: &expires}, audit.CLI); err != nil {
				return err
			}
			if never {
				fmt.Fprintf(cmd.ErrOrStderr(), "API key %s never expires now.\n", args[0])
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "API key %s expires at %s.\n", args[0], expires.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&at, "at", "", "the new expiry, RFC 3339, e.g. 2027-01-31T00:00:00Z")
	cmd.Flags().BoolVar(&never, "never", false, "remove the expiry: the key never expires")
	return cmd
}

func (c *KeysCommand) unbanCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "unban ID",
		Short: "Lift a key's ban",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := apikeys.Unban(app, args[0], audit.CLI); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Lifted any ban of API key %s.\n", args[0])
			return nil
		},
	}
}

func parseTime(flag, value string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return t, fmt.Errorf("%s %q is not an RFC 3339 time such as 2027-01-31T00:00:00Z", flag, value)
	}
	return t, nil
}

// printable is s with what would act on a terminal instead of printing
// (control and text-direction characters, see strictinput.Unprintable) written as
// \uXXXX escapes. Names are checked when saved, but a name saved before
// that rule, or straight into the database, may still hold them.
func printable(s string) string {
	if !strings.ContainsFunc(s, strictinput.Unprintable) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strictinput.Unprintable(r) || r == utf8.RuneError {
			fmt.Fprintf(&b, "\\u%04X", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// dateOrEmpty is t as PocketBase shows dates, or "" when zero.
func dateOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d, _ := types.ParseDateTime(t) // a time.Time always parses
	return d.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
